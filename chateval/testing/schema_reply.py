"""Replies that satisfy a JSON schema, for fake servers that imitate a backend with structured
output: such a server answers plain prose unless the request carries a ``response_format``
JSON schema, and then returns an object of that schema (as vLLM's guided decoding does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .protocols import requested_schema

PLAIN_REPLY = "Thanks for asking. I have thought about it and I believe this is right."


def instance_of(schema: dict[str, Any], root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small value that validates against ``schema`` (the subset pydantic emits)."""
    root = root or schema
    if "$ref" in schema:  # "#/$defs/Name"
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return instance_of(target, root, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:  # the first non-null alternative
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance_of(options[0], root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {
            name: instance_of(sub, root, depth + 1)
            for name, sub in props.items()
            if name in schema.get("required", props)
        }
    if kind == "array":
        n = max(1, schema.get("minItems", 1)) if depth < 6 else schema.get("minItems", 0)
        return [instance_of(schema.get("items", {}), root, depth + 1) for _ in range(n)]
    if kind == "string":
        return "2024-01-01T00:00:00Z" if schema.get("format") in ("date-time", "date") else "placeholder"
    if kind == "integer":
        return max(0, schema.get("minimum", 0))
    if kind == "number":
        return float(max(0, schema.get("minimum", 0)))
    if kind == "boolean":
        return True
    return None


def schema_responder(plain: str | Callable[[dict[str, Any]], str] = PLAIN_REPLY) -> Callable[[dict[str, Any]], str]:
    """A responder for ``FakeOpenAIServer``: JSON of the requested schema, else ``plain`` text."""

    def respond(body: dict[str, Any]) -> str:
        schema = requested_schema(body)
        if schema is not None:
            return json.dumps(instance_of(schema))
        return plain(body) if callable(plain) else plain

    return respond
