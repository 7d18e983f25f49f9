"""How `bench longmemeval` scores a ranking: the gold evidence of a question as LongMemEval's
retrieval scripts define it (official ids, user turns only), a system's ranked items mapped to
sessions as the official turn-to-session script does, the metrics at every k, and the documents
the baseline rankers (BM25, dense, hybrid) rank."""

from __future__ import annotations

from typing import Any

from ...datasets import LMEQuestion
from ..retrieval_metrics import metrics_at, session_metrics_from_turns
from .settings import RECALL_K


def source_ids(q: LMEQuestion) -> dict[str, str]:
    """Every session and turn id of the haystack -> the id the official file gives it: a
    session listed twice is ingested twice (the later copy under a suffixed id, so systems can
    tell them apart) but scored under its one official id, as the official scripts do."""
    out: dict[str, str] = {}
    for s in q.sessions:
        out[s.id] = s.meta.get("copy_of", s.id)
        for t in s.turns:
            out[t.id] = t.meta.get("copy_of", t.id)
    return out


def gold_evidence(q: LMEQuestion) -> tuple[set[str], set[str]]:
    """Gold sessions and turns as LongMemEval's retrieval scripts define them: only user turns
    count; a turn is gold if it has has_answer in an evidence session (id containing 'answer');
    a session is gold if it is an evidence session with at least one such turn. Official ids."""
    src = source_ids(q)
    turns = {
        src[t.id]
        for s in q.sessions
        if "answer" in src[s.id]
        for t in s.turns
        if t.role == "user" and t.meta.get("has_answer")
    }
    sessions = {src[s.id] for s in q.sessions if any(src[t.id] in turns for t in s.turns)}
    return sessions, turns


def item_sessions(
    units: list[tuple[str, list[str]]], gold_turns: set[str], src: dict[str, str]
) -> tuple[list[str], list[bool]]:
    """A system's ranked items (session id, turn ids) as the official turn-to-session mapping
    sees a turn ranking: one entry per item, its session repeated as often as it recurs, and
    relevant if it holds a gold turn. The official code renames the other turns of an evidence
    session ('answer' -> 'noans'), so they stand for a session of their own, not the gold one."""
    labels, relevant = [], []
    for sid, turn_ids in units:
        hit = any(src.get(t, t) in gold_turns for t in turn_ids)
        session = src.get(sid, sid)
        labels.append(session if hit or "answer" not in session else f"noans::{session}")
        relevant.append(hit)
    return labels, relevant


def retrieval_record(
    q: LMEQuestion,
    ranked_sessions: list[str],
    ranked_turns: list[str],
    *,
    sessions_only: bool = False,
    items: list[tuple[str, list[str]]] | None = None,
) -> dict[str, Any]:
    """Scores of one ranking. ``items``: a system's ranked items as (session id, turn ids);
    unless each is a whole session (its id is its session's), the session level is computed
    from them as from a turn ranking (``session_metrics_from_turns``); otherwise, and for the
    baselines, ``ranked_sessions`` is scored as a session ranking."""
    gold_s, gold_t = gold_evidence(q)
    if q.is_abstention or not gold_t:
        # Excluded (and counted) as in the official scorer: nothing to retrieve.
        return {"evaluable": False, "reason": "abstention" if q.is_abstention else "no user-side evidence"}
    src = source_ids(q)
    user_turns = [t.id for s in q.sessions for t in s.turns if t.role == "user"]
    known = set(user_turns)
    turns = [t for t in dict.fromkeys(ranked_turns) if t in known]
    # Relevant places in the corpus: a gold session (turn) listed twice is relevant twice.
    n_gold_turns = sum(src[t] in gold_t for t in user_turns)
    if items is not None:
        labels, relevant = item_sessions(items, gold_t, src)
        session = session_metrics_from_turns(labels, relevant, gold_s, n_gold_turns)
    else:
        session = metrics_at(
            [src.get(s, s) for s in ranked_sessions], gold_s, n_relevant=sum(src[s.id] in gold_s for s in q.sessions)
        )
    return {
        "evaluable": True,
        "session": session,
        "turn": None if sessions_only else metrics_at([src[t] for t in turns], gold_t, n_relevant=n_gold_turns),
        "ranked_sessions": ranked_sessions[:RECALL_K],
        "ranked_turns": turns[:RECALL_K],
        # How deep each ranking went: an @k beyond it is capped (it cannot grow), not a measurement.
        "depth": {"session": len(ranked_sessions), "turn": None if sessions_only else len(turns)},
    }


def ranker_documents(q: LMEQuestion) -> tuple[tuple[list[str], list[str]], tuple[list[str], list[str]]]:
    """What the baseline rankers rank, in date order: (ids, texts) of the user turns and of the
    sessions (their user turns joined)."""
    sess = sorted(q.sessions, key=lambda s: s.date)
    user = [t for s in sess for t in s.turns if t.role == "user"]
    sess_texts = ["\n".join(t.content for t in s.turns if t.role == "user") for s in sess]
    return ([t.id for t in user], [t.content for t in user]), ([s.id for s in sess], sess_texts)
