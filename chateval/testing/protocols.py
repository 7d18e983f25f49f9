"""The wire formats the fake server speaks besides OpenAI's Chat Completions: Anthropic's
Messages API (``POST /v1/messages``) and Ollama's native chat (``POST /api/chat``). Azure
OpenAI's ``/openai/deployments/{name}/chat/completions?api-version=...`` is the OpenAI format
on another path; ``POST /v1/embeddings`` answers with hashed pseudo-embeddings. Each function builds one payload; the server adds faults around them.
A Chat Completions request that offers ``tools`` is answered with calls of them when the reply
text is a JSON object ``{"tool_calls": [{"name": ..., "arguments": {...}}, ...]}`` (LangMem's
extraction calls tools; the project's own steps never send any)."""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Any
from urllib.parse import urlsplit

from ..util.text import common_prefix  # noqa: F401  (re-exported: the fake servers and benchmarks use it from here)

OPENAI, ANTHROPIC, OLLAMA, EMBEDDINGS = "openai", "anthropic", "ollama", "embeddings"


def route(path: str) -> str | None:
    """Which protocol a POST path speaks (None: no such route)."""
    p = urlsplit(path).path.rstrip("/")
    if p.endswith("/chat/completions"):
        return OPENAI
    if p.endswith("/v1/messages"):
        return ANTHROPIC
    if p.endswith("/api/chat"):
        return OLLAMA
    if p.endswith("/embeddings"):
        return EMBEDDINGS
    return None


def approx_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts / blocks
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def prompt_tokens(body: dict[str, Any]) -> int:
    messages = list(body.get("messages") or [])
    system = body.get("system")  # Anthropic keeps the system prompt apart
    total = (4 + approx_tokens(_text(system))) if system else 0
    for m in messages:
        total += 4 + approx_tokens(_text(m.get("content") if isinstance(m, dict) else None))
    return max(1, total)


def prompt_text(body: dict[str, Any]) -> str:
    """The prompt of a chat request as one string, in the order a server tokenizes it (the
    system prompt, then each message with its role): what a prefix cache matches on."""
    parts = [f"system\x00{_text(body['system'])}"] if body.get("system") else []
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            parts.append(f"{m.get('role')}\x00{m.get('name') or ''}\x00{_text(m.get('content'))}")
    return "\x01".join(parts)


def anthropic_breakpoint(body: dict[str, Any]) -> str | None:
    """The system text up to the last block marked with cache_control (None: no breakpoint)."""
    system = body.get("system")
    if not isinstance(system, list):
        return None
    end = max((i for i, b in enumerate(system) if isinstance(b, dict) and b.get("cache_control")), default=-1)
    return "".join(str(b.get("text", "")) for b in system[: end + 1]) if end >= 0 else None


def vector(text: str, dim: int) -> list[float]:
    """A deterministic pseudo-embedding: hashed words, so texts sharing words point alike."""
    v = [0.0] * dim
    for word in text.lower().split():
        h = int(hashlib.blake2b(word.encode(), digest_size=8).hexdigest(), 16)
        v[h % dim] += 1.0 if h >> 63 else -1.0
    return v


def embeddings(body: dict[str, Any], dim: int, empty: bool) -> dict[str, Any]:
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs or []]
    tokens = sum(approx_tokens(t) for t in texts)
    return {
        "object": "list",
        "model": str(body.get("model", "test-model")),
        "data": []
        if empty
        else [{"object": "embedding", "index": i, "embedding": vector(t, dim)} for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def completion(
    protocol: str, body: dict[str, Any], text: str, n: int, dim: int = 8, cache_read: int = 0, cache_write: int = 0
) -> dict[str, Any]:
    """``cache_read``/``cache_write``: prompt tokens the simulated prompt cache served / stored
    (reported in each protocol's own fields; Ollama has none)."""
    if protocol == EMBEDDINGS:  # the reply text plays no part; an "empty" fault sends no vectors
        return embeddings(body, dim, empty=not text)
    prompt, done = prompt_tokens(body), approx_tokens(text)
    model = str(body.get("model", "test-model"))
    if protocol == ANTHROPIC:  # input_tokens excludes the cached part, as Anthropic reports it
        read, write = min(cache_read, prompt), min(cache_write, prompt - min(cache_read, prompt))
        return {
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt - read - write,
                "output_tokens": done,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
            },
        }
    if protocol == OLLAMA:
        return {
            "model": model,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt,
            "eval_count": done,
            "total_duration": 1,
            "eval_duration": 1,
        }
    calls = tool_calls(body, text)
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None if calls else text, "refusal": None}
                | ({"tool_calls": calls} if calls else {}),
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": done,
            "total_tokens": prompt + done,
            "prompt_tokens_details": {"cached_tokens": min(cache_read, prompt)},
        },
    }


def tool_calls(body: dict[str, Any], text: str) -> list[dict[str, Any]] | None:
    """The tool calls a reply text asks for (see the module doc), or None for a plain reply."""
    if not body.get("tools"):
        return None
    try:
        wanted = json.loads(text)
    except ValueError:
        return None
    if not isinstance(wanted, dict) or not isinstance(wanted.get("tool_calls"), list):
        return None
    return [
        {
            "id": f"call_fake_{i}",
            "type": "function",
            "function": {"name": str(c["name"]), "arguments": json.dumps(c.get("arguments", {}))},
        }
        for i, c in enumerate(wanted["tool_calls"])
    ]


def error(protocol: str, message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    if protocol == ANTHROPIC:
        return {"type": "error", "error": {"type": type_, "message": message}}
    if protocol == OLLAMA:
        return {"error": message}
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks the reply to follow: OpenAI's response_format, Ollama's format."""
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema") or {}
    if isinstance(body.get("format"), dict):
        return body["format"]
    return None
