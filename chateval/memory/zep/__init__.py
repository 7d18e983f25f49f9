"""Zep / Graphiti: a temporal knowledge graph as a memory system under test (``chateval[zep]``).

Zep's engine is open source as graphiti-core; this package only adapts it: our model layer as
its LLM client, our embedder as its embedder and cross-encoder, deterministic offline answers
for its structured steps, and the workarounds its Kuzu driver needs. The system itself is
``zep.system`` (registered as ``zep`` when graphiti-core is installed).
"""

import os

# graphiti-core sends a PostHog telemetry event when a Graphiti object is built; its documented
# switch is this variable, read when graphiti_core.telemetry is imported. No network at run time
# beyond the model endpoint, so it is off for every import that goes through this package.
os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"

import warnings

with warnings.catch_warnings():
    # graphiti-core 0.30.2 declares a pydantic model with a class-based Config, which warns on
    # every import; nothing for our users to act on.
    warnings.simplefilter("ignore", DeprecationWarning)
    import graphiti_core  # noqa: E402,F401  (ImportError here: the extra is not installed)
