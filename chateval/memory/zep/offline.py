"""The offline model's answers to graphiti-core's structured steps (``graphiti:<ResponseModel>``).

THE ONE PLACE THE OFFLINE MODEL READS A PROMPT. Our own steps hand the offline model typed
inputs; graphiti's steps are not ours, and all graphiti passes its LLM client is the messages it
built. So these handlers read the structured blocks graphiti embeds in them (``<CURRENT
MESSAGE>``, ``<ENTITIES>`` JSON, ``<REFERENCE TIME>``, ...) — the data, never the instructions.
The community prompts (summarize_nodes) carry their data untagged, after a label
(``Summaries:``, ``Summary:``); those handlers read the JSON value after it.
A test builds graphiti's own prompts and checks the blocks are still found.

What the handlers do with the text (``offline_text``, ``offline_facts``): entities by
capitalisation and prepositions, facts as subject–verb–object clauses, dedupe by exact name or
fact, dates from the episode's reference time, and a new fact contradicts an old one with the
same subject and the same single-valued relation (LIVES_IN Paris vs LIVES_IN Berlin). Summaries
are extractive (first sentences).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from pydantic import BaseModel

from ...models import offline_step
from ...util.text import first_sentence
from .llm import GraphitiStepInputs
from .offline_facts import SINGLE_VALUED, extract_facts, find_name, parse_fact
from .offline_text import extract_entities, iso_z, norm, sentences, speaker_lines, user_side

# --- reading graphiti's blocks ----------------------------------------------------------------
_BLOCK = re.compile(r"<([A-Z][A-Z_ ]*[A-Z])>\n?(.*?)\n?</\1>", re.S)


def blocks(inputs: GraphitiStepInputs) -> dict[str, str]:
    """Tag -> body of the blocks in the user messages (the last one wins for a repeated tag)."""
    text = "\n".join(m.content for m in inputs.messages if m.role != "system")
    return {tag: body.strip() for tag, body in _BLOCK.findall(text)}


def _json_values(text: str) -> list[Any]:
    """Every JSON value in a block holding several (graphiti writes them one after another)."""
    dec, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        try:
            value, i = dec.raw_decode(text, i)
        except ValueError:
            break
        out.append(value)
    return out


def _records(text: str | None) -> list[dict[str, Any]]:
    """A list of dicts written as JSON, or as a Python repr (``dedupe_edges`` uses str(list))."""
    if not text:
        return []
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError):
            continue
        return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
    return []


# --- the handlers -------------------------------------------------------------------------------
def _out(fmt: type[BaseModel] | None, data: dict[str, Any]) -> BaseModel | str:
    return fmt.model_validate(data) if fmt is not None else json.dumps(data)


@offline_step("graphiti:ExtractedEntities")
def extracted_entities(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    b = blocks(inp)
    content = b.get("CURRENT MESSAGE") or b.get("TEXT") or b.get("JSON") or ""
    return _out(
        fmt,
        {
            "extracted_entities": [
                {"name": n, "entity_type_id": 0, "episode_indices": [0]} for n in extract_entities(content)
            ]
        },
    )


@offline_step("graphiti:NodeResolutions")
def node_resolutions(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    b = blocks(inp)
    existing = {norm(str(c.get("name", ""))): c.get("candidate_id") for c in _records(b.get("EXISTING ENTITIES"))}
    resolutions = []
    for e in _records(b.get("ENTITIES")):
        dup = existing.get(norm(str(e.get("name", ""))))
        resolutions.append(
            {
                "id": e.get("id", 0),
                "name": e.get("name", ""),
                "duplicate_candidate_id": dup if isinstance(dup, int) else -1,
            }
        )
    return _out(fmt, {"entity_resolutions": resolutions})


@offline_step("graphiti:ExtractedEdges")
def extracted_edges(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    b = blocks(inp)
    names = [str(n.get("name")) for n in _records(b.get("ENTITIES")) if n.get("name")]
    edges = [
        {
            "source_entity_name": s,
            "target_entity_name": t,
            "relation_type": r,
            "fact": f,
            "valid_at": None,
            "invalid_at": None,
            "episode_indices": [0],
        }
        # Dates are left to graphiti's timestamp step, as when a fact states none.
        for s, r, t, f in extract_facts(b.get("CURRENT_MESSAGE", ""), names)
    ]
    return _out(fmt, {"edges": edges})


@offline_step("graphiti:EdgeDuplicate")
def edge_duplicate(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    b = blocks(inp)
    new = b.get("NEW FACT", "")
    new_triple = parse_fact(new)
    duplicates, contradicted = [], []
    existing = _records(b.get("EXISTING FACTS"))
    for group, records in (("existing", existing), ("candidates", _records(b.get("FACT INVALIDATION CANDIDATES")))):
        for r in records:
            idx, fact = r.get("idx"), str(r.get("fact", ""))
            if not isinstance(idx, int):
                continue
            old = parse_fact(fact)
            same = norm(fact) == norm(new) or (old is not None and old == new_triple)
            if same:
                if group == "existing":  # duplicates may only come from EXISTING FACTS
                    duplicates.append(idx)
            elif (
                old
                and new_triple
                and old[0] == new_triple[0]
                and old[1] == new_triple[1]
                and old[1] in SINGLE_VALUED
                and old[2] != new_triple[2]
            ):
                contradicted.append(idx)
    return _out(fmt, {"duplicate_facts": duplicates, "contradicted_facts": contradicted})


@offline_step("graphiti:EdgeTimestamps")
def edge_timestamps(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    b = blocks(inp)
    return _out(fmt, {"valid_at": iso_z(b.get("REFERENCE TIME")), "invalid_at": None})


@offline_step("graphiti:SummarizedEntities")
def summarized_entities(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    """Extractive: the first sentence of each summary line plus of each new user-side sentence
    naming the entity, newest kept, within ~900 characters (graphiti caps summaries at 1000)."""
    b = blocks(inp)
    values = _json_values(b.get("MESSAGES", ""))
    current = next((v for v in reversed(values) if isinstance(v, str)), "")
    summaries = []
    for e in _records(b.get("ENTITIES")):
        name = str(e.get("name", ""))
        lines = [first_sentence(line, 200) for line in str(e.get("summary") or "").splitlines() if line.strip()]
        for speaker, text in speaker_lines(current):
            if user_side(speaker):
                lines += [
                    first_sentence(s, 200)
                    for s in sentences(text)
                    if (speaker and speaker.lower() == name.lower()) or find_name(name, s)
                ]
        kept: list[str] = []
        for line in reversed(list(dict.fromkeys(lines))):
            if sum(len(k) + 1 for k in kept) + len(line) > 900:
                break
            kept.insert(0, line)
        summaries.append({"name": name, "summary": "\n".join(kept) or name})
    return _out(fmt, {"summaries": summaries})


# --- communities (graphiti's summarize_nodes prompts carry their data after a label, untagged) ----
def _after_label(inp: GraphitiStepInputs, label: str) -> Any:
    """The JSON value written right after ``label`` in the last user message, or None."""
    text = next((m.content for m in reversed(inp.messages) if m.role != "system"), "")
    at = text.rfind(label)
    values = _json_values(text[at + len(label) :].strip()) if at >= 0 else []
    return values[0] if values else None


@offline_step("graphiti:Summary")
def community_summary(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    """Two summaries merged: their sentences, each once, within graphiti's 1000 characters."""
    parts = _after_label(inp, "Summaries:") or []
    lines = [s for p in parts if isinstance(p, dict) for s in sentences(str(p.get("summary", "")))]
    merged = ""
    for line in dict.fromkeys(lines):
        if len(merged) + len(line) + 1 > 990:
            break
        merged = f"{merged} {line}".strip()
    return _out(fmt, {"summary": merged})


@offline_step("graphiti:SummaryDescription")
def community_description(inp: GraphitiStepInputs, fmt: type[BaseModel] | None) -> BaseModel | str:
    """The summary's first sentence stands for its description."""
    summary = _after_label(inp, "Summary:")
    return _out(fmt, {"description": first_sentence(str(summary or ""), 200)})
