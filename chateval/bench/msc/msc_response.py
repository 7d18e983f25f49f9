"""`chateval bench msc-response`: THEANINE's own evaluation (Ong et al., NAACL 2025), next-response
generation on Multi-Session Chat (Xu et al. 2022).

For each episode of the MSC release files (earlier sessions + the last session; which split,
sessions and episodes: ``episodes.py``, the paper's protocol being ``--protocol paper``):

1. each system ingests the earlier sessions, dated from the release's gaps between sessions
   (``datasets.msc_release``), once per episode;
2. at each turn of the last session from the second on, both speakers' (the official code's
   ``theanine_all``; ``--speakers speaker2``: Speaker 2's only), or a seeded sample of
   ``--turns-per-episode`` of them kept in dialogue order, it gets the last session's turns
   before that turn and generates the next utterance (``respond`` with the dialogue);
3. the utterance is scored against the gold one with BLEU-4, ROUGE-L and a MiniLM BERTScore-style
   F1 (``text_metrics``: greedy matching of all-MiniLM-L6-v2 token embeddings, no IDF, no
   rescaling); memory helpfulness is judged by the debate panel *pairwise*, as the paper's
   head-to-head: at each turn the reference system's retrieved memories (default: the first of
   ``--systems``) against each other system's (``--helpfulness-compare responses``: their
   responses; see ``pairs.py``), with both orders shown (position calibration), the
   win rate with its Wilson interval and a paired comparison. ``--helpfulness-protocol score``
   rates each response's memory context 1-10 instead (one panel per response).

MAUVE, the paper's fourth automatic metric, is left out: its maintained package (mauve-text)
featurizes with GPT-2 from the model hub, which cannot load here.

One unit = (episode, turn, system), then (pairwise) one unit per (episode, turn, reference vs
other system); a unit whose response or judgement failed is recorded as failed, counted, left out
of every mean and redone by --resume. Per unit the record keeps the
prompt step that wrote the response and, for systems that expose one (theanine), the trace of
retrieved memories and raw/refined timelines; each system's memory after ingest is saved under
``memories/`` (theanine: the graph as networkx node-link JSON).
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any, Literal

from ...datasets.msc_release import MSCDialogue
from ...debate.samples import Sample
from ...debate.transcript import turn_records
from ...evaluation.judges import Judges
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from ..base import Benchmark, open_run, run_units
from ..records import SystemsSummary, TurnRecord, verdict_record
from ..registry import benchmark
from ..setup import MemoryBench, resolve_system
from ..slot import SlotPool, SystemSlot
from ..summaries import fields, records_of, summed_cost, system_rows
from ..text_metrics import bleu4, rouge_l
from .episodes import msc_episodes, msc_protocol, session_paths
from .pairs import ASPECT, Compare, pair_sample
from .report import summarize_msc_response, write_msc_response_report
from .settings import DESCRIPTION, GATE_METRICS, MSCResponseConfig

HELPFULNESS_RULE = (
    "The context holds what the dialogue agent recalled from its earlier conversations with the same person "
    "(its memory). Rate only 'memory helpfulness': how much that memory helped the response. 10: the response "
    "draws on the memory where it matters (remembers what the person said before, follows how things changed) "
    "and is better for it; 5: the memory is touched on but adds little; 1: the memory is irrelevant, unused where "
    "it should have been used, or it misled the response into something inconsistent with the past."
)
PAIR_SEP = "~vs~"  # in a pairwise unit's key: <episode>::t<turn>::<reference>~vs~<other>


def turns_to_predict(
    ep: MSCDialogue, per_episode: int | None, seed: int, speakers: Literal["all", "speaker2"] = "all"
) -> list[int]:
    """Indexes of the last session's turns to predict: every turn from the second on (both
    speakers, the official ``theanine_all``), or Speaker 2's only."""
    idx = [i for i, t in enumerate(ep.current.turns) if i > 0 and (speakers == "all" or t.role == "Speaker 2")]
    if per_episode is None or per_episode >= len(idx):
        return idx
    return sorted(random.Random(f"{seed}|{ep.id}").sample(idx, per_episode))


@benchmark("msc-response")
class MSCResponse(Benchmark):
    description = DESCRIPTION
    config_model = MSCResponseConfig
    distributable = True  # an episode's turns share one system per name: grouped
    record_type, summary_type = TurnRecord, SystemsSummary
    gate_metrics = GATE_METRICS

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        return system_rows(
            summary,
            "ROUGE-L",
            lambda e: (
                ((e.get("metrics") or {}).get("rouge_l") or {}).get("mean"),
                e.get("n_units"),
                e.get("n_failed"),
                summed_cost(e.get("answer_usage"), e.get("judge_usage")),
            ),
        )

    async def run(self, config: MSCResponseConfig, progress: RunProgress | None) -> dict[str, Any]:
        if config.judge is not None:
            raise ConfigError(
                "--judge does not apply to msc-response: the debate panel rates memory helpfulness "
                "(choose it with --judge-preset and --judge-model, or --no-helpfulness)"
            )
        if not config.systems:
            raise ConfigError("--systems: give at least one memory system (e.g. theanine,retrieval)")
        names = [resolve_system(spec).name for spec in config.systems]  # unknown names fail before the data is read
        pairwise = config.helpfulness and config.helpfulness_protocol == "pairwise"
        reference = config.helpfulness_reference or names[0]
        protocol = msc_protocol(config)
        paths = session_paths(config, protocol)
        episodes = msc_episodes(paths, protocol, config)
        data = ", ".join(map(str, paths))
        sessions = sorted({len(ep.past) + 1 for ep in episodes})
        if pairwise and len(names) < 2:
            raise ConfigError(
                "pairwise memory helpfulness (the head-to-head) needs a baseline: give two or "
                "more --systems (e.g. theanine,retrieval), or --helpfulness-protocol score, or "
                "--no-helpfulness"
            )
        if pairwise and reference not in names:
            raise ConfigError(f"--helpfulness-reference '{reference}': not in --systems ({', '.join(names)})")
        bench = MemoryBench(config, need_judges=False)
        if progress:
            progress.totals = bench.answer_layer.totals
        judges = None
        if config.helpfulness:
            judges = bench.panel_judges({"task": "pairwise", "swap": True} if pairwise else {"task": "score"})
        scorer = None
        if config.bertscore:
            from ..text_metrics import MiniLMScorer

            scorer = MiniLMScorer(cache=config.cache)  # fails here, before any work, if the wheel is missing
        run_config = bench.run_config(
            {
                "benchmark": "msc-response",
                "data": data,
                "protocol": config.protocol,
                "split": None if config.data and not Path(config.data).is_dir() else protocol.split,  # a file: as it is
                "sessions": sessions,
                "sample": protocol.sample,
                "episodes": [ep.id for ep in episodes] if protocol.sample is not None else None,
                "turns_per_episode": config.turns_per_episode,
                "seed": config.seed,
                "speakers": config.speakers,
                "helpfulness_protocol": (config.helpfulness_protocol if judges else None),
                "helpfulness_reference": reference if pairwise else None,
                "helpfulness_compare": config.helpfulness_compare if pairwise else None,
                "metrics": ["bleu4", "rouge_l"] + (["bertscore_minilm"] if scorer else []),
                "bertscore_model": scorer.name if scorer else None,
                "mauve": "left out (needs GPT-2 from the hub)",
                "helpfulness_panel": judges.run_config()["judging"] if judges else None,
                "uses_judge": judges is not None,
            }
        )
        with open_run(config, run_config) as run:
            plan = [
                (ep, i)
                for ep in episodes
                for i in turns_to_predict(ep, config.turns_per_episode, config.seed, config.speakers)
            ]
            units = [(f"{ep.id}::t{i + 1}::{name}", (ep, i, name)) for ep, i in plan for name in bench.systems]
            by_id = {ep.id: ep for ep in episodes}
            pool = SlotPool(
                bench,
                [(ep.id, name) for key, (ep, _, name) in units if key not in run.done],
                sessions=lambda eid: by_id[eid].past,
                export_as=lambda eid, name: f"memories/{eid}__{name}.json",
            )
            metric_lock = asyncio.Lock()  # the MiniLM model serves one unit at a time

            async def unit(item: tuple[MSCDialogue, int, str]) -> dict[str, Any]:
                ep, i, name = item
                try:
                    return await self._unit(
                        ep, i, name, pool.get(ep.id, name), None if pairwise else judges, scorer, metric_lock
                    )
                finally:
                    pool.done(ep.id, name)

            try:
                await run_units(
                    units,
                    unit,
                    run,
                    workers=bench.workers,
                    progress=progress,
                    group=lambda item: (item[0].id, item[2]),
                    keep=None,  # the summary reads the run's records once, a small view of each
                )
            finally:
                pool.close()
            keys = [k for k, _ in units]
            if pairwise and judges is not None:
                # Phase 2: the head-to-head, once both responses of a turn exist (a pair whose
                # response failed fails too, and --resume redoes it after redoing the response).
                pairs = [
                    (f"{ep.id}::t{i + 1}::{reference}{PAIR_SEP}{other}", (ep, i, reference, other))
                    for ep, i in plan
                    for other in bench.systems
                    if other != reference
                ]
                keys += [k for k, _ in pairs]
                # Of each response a pair still to judge needs, only what the panel compares.
                todo = {(ep.id, i + 1, s) for k, (ep, i, a, b) in pairs if k not in run.done for s in (a, b)}
                shown = fields("status", "response" if config.helpfulness_compare == "responses" else "context")
                got = {
                    (r["episode"], r["turn"], r["system"]): shown(r)
                    for r in records_of(run, (k for k, _ in units))
                    if (r.get("episode"), r.get("turn"), r.get("system")) in todo
                }

                async def pair_unit(item: tuple[MSCDialogue, int, str, str]) -> dict[str, Any]:
                    ep, i, a, b = item
                    ra, rb = got.get((ep.id, i + 1, a)), got.get((ep.id, i + 1, b))
                    return await self._pair(ep, i, a, b, ra, rb, judges, config.helpfulness_compare)

                await run_units(pairs, pair_unit, run, workers=bench.workers, progress=progress, keep=None)
            summary = summarize_msc_response(
                records_of(run, keys),
                systems=bench.systems,
                offline=run_config["offline"],
                reference=reference if pairwise else None,
            )
            summary |= {
                "benchmark": "msc-response",
                "data": data,
                "n_episodes": len(episodes),
                "n_turns": len(plan),
                "turns_per_episode": config.turns_per_episode,
                "seed": config.seed,
                "speakers": config.speakers,
                "session": sessions[0] if len(sessions) == 1 else None,
                "sessions": sessions,
                "split": run_config["judging"]["split"],
                "sample": protocol.sample,
                "protocol": config.protocol,
                "metrics": run_config["judging"]["metrics"],
                "helpfulness": judges is not None,
                "helpfulness_protocol": run_config["judging"]["helpfulness_protocol"],
                "helpfulness_compare": run_config["judging"]["helpfulness_compare"],
                "config_hash": run_config["config_hash"],
                "complete": summary["n_units"] == len(keys),
            }
            run.write_summary(summary)
            write_msc_response_report(run.path, summary)
        return summary

    async def _unit(
        self,
        ep: MSCDialogue,
        i: int,
        name: str,
        slot: SystemSlot,
        judges: Judges | None,
        scorer: Any,
        metric_lock: asyncio.Lock,
    ) -> dict[str, Any]:
        dialogue = ep.current.turns[:i]
        gold = ep.current.turns[i].content
        got = await slot.respond(dialogue, ep.current.date)
        response = got.pop("answer")
        metrics: dict[str, float | None] = {"bleu4": bleu4(response, gold), "rouge_l": rouge_l(response, gold)}
        if scorer is not None:
            async with metric_lock:
                metrics["bertscore_minilm"] = await asyncio.to_thread(lambda: scorer.bertscore([response], [gold])[0])
        record: dict[str, Any] = {
            "episode": ep.id,
            "turn": i + 1,
            "turn_id": ep.current.turns[i].id,
            "system": name,
            "last_turn": dialogue[-1].content,
            "gold": gold,
            "response": response,
            "metrics": metrics,
            **got,
        }
        if judges is None:
            return record
        t0 = time.perf_counter()
        history = "\n".join(f"{t.role}: {t.content}" for t in dialogue)
        result = await judges.judge(
            Sample(
                id=f"{ep.id}::t{i + 1}",
                question=f"{dialogue[-1].role}: {dialogue[-1].content}",
                answer=response,
                context=f"Memory the agent recalled:\n{got['context'] or '(nothing)'}\n\nThe conversation so far:\n{history}",
                aspects=[ASPECT],
                guidelines=HELPFULNESS_RULE,
            ),
            "score",
        )
        record["latency"]["judge_s"] = time.perf_counter() - t0
        verdict = result.verdict
        record["helpfulness"] = {
            "score": None if verdict is None else verdict.scores.get(ASPECT, verdict.score),
            "status": result.status,
            "error": result.error,
            "agents": [a.model_dump() for a in result.agents],
            "transcript": turn_records(result.transcript),
            "usage": result.usage.model_dump(),
        }
        if result.status != "ok" or record["helpfulness"]["score"] is None:
            record |= {"status": "failed", "error": f"helpfulness judge: {result.error or 'no score'}"}
        return record

    async def _pair(
        self,
        ep: MSCDialogue,
        i: int,
        a: str,
        b: str,
        ra: dict[str, Any] | None,
        rb: dict[str, Any] | None,
        judges: Judges,
        compare: Compare,
    ) -> dict[str, Any]:
        """The head-to-head on memory helpfulness at one turn: ``a``'s retrieved memories (answer 1,
        side A) against ``b``'s, as the paper (``--helpfulness-compare memories``), or their
        responses; the earlier sessions and the conversation so far are the context."""
        record: dict[str, Any] = {
            "kind": "helpfulness_pair",
            "episode": ep.id,
            "turn": i + 1,
            "turn_id": ep.current.turns[i].id,
            "systems": {"A": a, "B": b},
        }
        missing = [n for n, r in ((a, ra), (b, rb)) if r is None or r.get("status") != "ok"]
        if missing:
            return record | {"status": "failed", "error": f"no response of {' and '.join(missing)} to judge"}
        assert ra is not None and rb is not None
        t0 = time.perf_counter()
        sample = pair_sample(ep, i, f"{ep.id}::t{i + 1}::{a}{PAIR_SEP}{b}", ra, rb, compare)
        result = await judges.judge(sample)
        shown = "memories" if compare == "memories" else "responses"
        record |= {
            shown: {"A": sample.answer_1, "B": sample.answer_2},
            "latency": {"judge_s": time.perf_counter() - t0},
            "usage": result.usage.model_dump(),
            **verdict_record(result),
        }
        if result.status != "ok" or record["verdict"] not in ("A", "B", "tie"):
            return record | {"status": "failed", "error": f"helpfulness judge: {result.error or 'no verdict'}"}
        return record
