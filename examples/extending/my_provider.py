"""A model provider in a plugin file: ``gateway/<model>`` sends OpenAI-format requests to a
company gateway that wants its own key variable and a team header on every call.

    GATEWAY_API_KEY=... chateval evaluate examples/faireval_pairwise.jsonl \\
        --plugin examples/extending/my_provider.py --model gateway/gpt-4o-mini \\
        --base-url https://llm-gateway.example.com/v1

The builder only makes a backend: the model layer around it adds the cache, retries, the
concurrency limit, metering and the structured-output fallback, as for the built-in providers,
and a comma-separated --base-url makes a pool of such backends. An installed package registers
the same function under the ``chateval.providers`` entry point group instead of ``--plugin``::

    [project.entry-points."chateval.providers"]
    gateway = "my_package.providers:build_gateway"
"""

from __future__ import annotations

import os

import openai

from chateval.models.openai_backend import OpenAIBackend
from chateval.models.providers import info, key, provider


@provider("gateway", url_env=("GATEWAY_BASE_URL",), needs_url=True)
def build_gateway(spec, url, params, retry, structured):
    """(spec, endpoint, generation params, retry policy, structured-output mode) -> a Backend."""
    client = openai.AsyncOpenAI(
        api_key=key(spec, "GATEWAY_API_KEY"),  # read through key(): its value is scrubbed from run files
        base_url=url,
        default_headers={"X-Team": os.environ.get("GATEWAY_TEAM", "evals")},
        max_retries=0,  # the model layer retries (and meters each attempt): the SDK must not
        timeout=retry.timeout_s,
    )
    # info(structured, True): the gateway takes JSON-schema response formats ("auto" asks for them).
    return OpenAIBackend(client, spec.model, info(structured, True))
