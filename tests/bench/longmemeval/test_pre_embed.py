"""The run-level pre-embedding pass of `bench longmemeval`: the texts of every unit are encoded
once, in one length-sorted pass, before the units start; the units then encode nothing the pass
could know; results equal a run without it (offline, tiny fixture, hash embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.bench.executor import Execution, reset, use
from chateval.bench.longmemeval.longmemeval import LongMemEvalConfig, pre_embed
from chateval.bench.setup import MemoryBench
from chateval.cli import main
from chateval.memory.embeddings import Embedder, HashingEmbedder, make_embedder

from ...conftest import FIXTURES, read_jsonl

LME = FIXTURES / "lme_tiny.json"


@pytest.fixture
def calls(monkeypatch) -> list[tuple[str, list[str]]]:
    """Every batch the hash embedder encodes, tagged with the phase it was encoded in."""
    log: list[tuple[str, list[str]]] = []
    phase = ["units"]
    embed, prefill = HashingEmbedder._embed, Embedder.prefill

    async def recording(self, texts):
        log.append((phase[0], list(texts)))
        return await embed(self, texts)

    async def in_prefill(self, texts, chunk=4096, on_chunk=None):
        phase[0] = "pre"
        try:
            return await prefill(self, texts, chunk, on_chunk)
        finally:
            phase[0] = "units"

    monkeypatch.setattr(HashingEmbedder, "_embed", recording)
    monkeypatch.setattr(Embedder, "prefill", in_prefill)
    return log


def run(out: Path, cache: Path, *extra: str, systems: str = "longmemeval_rag", rankers: str = "bm25") -> dict:
    import os

    os.environ["CHATEVAL_CACHE_DIR"] = str(cache)  # the conftest fixture restores it afterwards
    assert main(["bench", "longmemeval", "--data", str(LME), "--out", str(out), "--retrieval-only",
                 "--rankers", rankers, "--systems", systems, "--embedder", "hash",
                 "--workers", "2", *extra]) == 0
    return json.loads((out / "summary.json").read_text())


def results(out: Path) -> dict[str, dict]:
    return {r["key"]: r["retrieval"] for r in read_jsonl(out / "samples.jsonl")}


# Each system setting on its own (the baselines would embed some of the same texts), then the
# baselines alone, then both.
@pytest.mark.slow
@pytest.mark.parametrize("systems,rankers,settings", [
    ("longmemeval_rag", "bm25", []),
    ("longmemeval_rag", "bm25", ["--set", "longmemeval_rag.session_fusion=true"]),
    ("longmemeval_rag", "bm25", ["--set", "longmemeval_rag.granularity=session"]),
    ("longmemeval_rag", "bm25", ["--set", "longmemeval_rag.key_roles=all", "--set", "longmemeval_rag.retriever=dense"]),
    ("", "bm25,dense,hybrid", []),
    ("longmemeval_rag", "bm25,dense,hybrid", []),
])
def test_pre_pass_encodes_each_text_once_and_the_units_nothing(tmp_path, calls, systems, rankers, settings):
    # Key expansions (the default key=facts) need the model, so their units embed them: leave them out here.
    no_key = ["--set", "longmemeval_rag.key=none"] if systems else []
    summary = run(tmp_path / "pre", tmp_path / "c1", *no_key, *settings, systems=systems, rankers=rankers)
    pre = [t for phase, batch in calls if phase == "pre" for t in batch]
    assert pre and [p for p, _ in calls] == ["pre"] * len(calls)  # the units found every text cached
    assert len(pre) == len(set(pre))  # each unique text once
    assert [len(t) for t in pre] == sorted(map(len, pre), reverse=True)  # one length-sorted pass
    assert summary["embeddings"]["computed"] == len(pre) == summary["embeddings"]["pre_embed"]["texts"]

    calls.clear()
    off = run(tmp_path / "off", tmp_path / "c2", *no_key, *settings, "--no-pre-embed", systems=systems, rankers=rankers)
    assert off["embeddings"]["pre_embed"] == {"skipped": "--no-pre-embed"}
    units = [t for phase, batch in calls for t in batch]
    assert {p for p, _ in calls} == {"units"}
    assert set(units) == set(pre)  # the pass encodes exactly what the units would: no more, no fewer
    assert results(tmp_path / "off") == results(tmp_path / "pre")
    assert {m: e["retrieval"] for m, e in off["methods"].items()} == {
        m: e["retrieval"] for m, e in summary["methods"].items()}


@pytest.mark.slow
def test_a_system_whose_texts_need_model_calls_still_embeds_those_in_its_units(tmp_path, calls):
    summary = run(tmp_path / "pre", tmp_path / "c1", systems="retrieval")
    pre = {t for phase, batch in calls if phase == "pre" for t in batch}
    later = [t for phase, batch in calls if phase == "units" for t in batch]
    questions = {q["question"] for q in json.loads(LME.read_text())}
    assert questions <= pre  # the question is known up front, the memory sentences are not
    assert later and not set(later) & pre and len(later) == len(set(later))
    assert summary["embeddings"]["computed"] == len(pre) + len(later)


def test_resume_pre_embeds_only_the_units_left(tmp_path, calls):
    run(tmp_path / "r", tmp_path / "c1", "--limit", "2")
    calls.clear()
    summary = run(tmp_path / "r", tmp_path / "c1", "--resume")
    keys = [r["key"] for r in read_jsonl(tmp_path / "r" / "samples.jsonl")]
    assert len(keys) == len(set(keys)) == 5 * 2  # questions x (bm25, longmemeval_rag)
    first_two = {q["question"] for q in json.loads(LME.read_text())[:2]}
    pre = {t for phase, batch in calls if phase == "pre" for t in batch}
    assert pre and not pre & first_two and {p for p, _ in calls} == {"pre"}
    assert summary["embeddings"]["pre_embed"]["texts"] == len(pre)


async def test_prefill_skips_cached_texts_and_counts_each_once(tmp_path):
    emb = make_embedder("hash", cache_dir=tmp_path)
    assert await emb.prefill(["b", "aaa", "b", "cc"], chunk=2) == 3 and emb.computed == 3
    again = make_embedder("hash", cache_dir=tmp_path)
    assert await again.prefill(["cc", "dddd"]) == 1 and again.computed == 1
    assert (await again.embed(["aaa", "b"])).shape == (2, 256) and again.computed == 1  # cached by the pass


async def test_prefill_reports_each_chunk_kept(tmp_path):
    """A cold pass can take an hour: the caller hears after each chunk, counting new texts only."""
    seen: list[tuple[int, int]] = []
    emb = make_embedder("hash", cache_dir=tmp_path)
    await emb.embed(["cached"])
    await emb.prefill(["a", "bb", "cached", "ccc", "a", "dddd", "eeeee"], chunk=2, on_chunk=lambda d, t: seen.append((d, t)))
    assert seen == [(2, 5), (4, 5), (5, 5)]


async def test_skipped_under_ray_and_without_a_cache(tmp_path):
    cfg = LongMemEvalConfig(data=str(LME), out=str(tmp_path / "o"), retrieval_only=True, embedder="hash")
    bench = MemoryBench(cfg, need_judges=False)
    token = use(Execution(executor="ray"))
    try:
        assert "ray" in (await pre_embed(bench, [], [], enabled=True, progress=None))["skipped"]
    finally:
        reset(token)
    uncached = MemoryBench(cfg.model_copy(update={"cache": False}), need_judges=False)
    assert "--no-cache" in (await pre_embed(uncached, [], [], enabled=True, progress=None))["skipped"]
    assert bench.embedder.computed == uncached.embedder.computed == 0


def test_the_pass_prints_its_progress(tmp_path, capsys):
    summary = run(tmp_path / "r", tmp_path / "c")
    err = capsys.readouterr().err
    n = summary["embeddings"]["pre_embed"]["texts"]
    assert n and "embedding up to" in err and f"embedded {n:,} of {n:,} new texts" in err
