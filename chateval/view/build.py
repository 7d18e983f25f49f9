"""Render run directories into one HTML page (inline CSS and JS, nothing fetched from the network),
its rows in chunks: the first in the page, the others beside it (:mod:`.paging`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from ..runs.files import atomic_write_lines, grouped
from ..util.errors import InputError, RunWriteError
from ..util.secrets import redact_url
from .index import Entry, Reader
from .index import cap_context as cap_context  # its home was here: build.cap_context still works
from .load import NotARunDir, RunView, index_run
from .paging import (
    CHUNK_ROWS,
    check_chunk_rows,
    chunk_slice,
    data_dir,
    inputs_text,
    n_chunks,
    search_text,
    static_source,
    write_chunks,
)
from .protocol import compared_cards
from .runlist import RunEntry, list_runs
from .samples import SampleView
from .templating import pretty as _pretty
from .templating import template_env as _env

# Persona colours: distinct, readable on white, assigned in order of first appearance.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]

# Settings worth a line in the header, looked up in the run's config (evaluate: "config", benchmarks:
# "judging") and then in its summary; everything else is in the "full config" block.
CONFIG_KEYS = (
    "benchmark",
    "data",
    "model",
    "answer_model",
    "judge",
    "judge_model",
    # Where the models were called: two runs of one model on different servers differ (issue 39).
    "base_url",
    "debater_models",
    "embedder_base_url",
    "qdrant_url",
    "judge_protocol",
    "reader_prompt",
    "reader_max_tokens",
    "full_context_batch",
    "task",
    "strategy",
    "agents",
    "turns",
    "personas",
    "aggregate",
    "swap",
    "panel",
    "systems",
    "settings",
    "embedder",
    "context",
    "dataset",
    "judge_panel",
)


SUMMARY_SETTINGS = {
    "benchmark",
    "data",
    "model",
    "judge",
    "judge_model",
    "answer_model",
    "task",
    "strategy",
    "agents",
    "turns",
    "context",
    "dataset",
}


def _colours(runs: list[RunView]) -> dict[str, str]:
    """A colour per debate speaker, in order of first appearance on the page."""
    out: dict[str, str] = {}
    seen: set[tuple[str, ...]] = set()
    for run in runs:
        for e in run.entries:
            if e.speakers not in seen:  # the entries of one panel share one tuple
                seen.add(e.speakers)
                for name in e.speakers:
                    out.setdefault(name, PALETTE[len(out) % len(PALETTE)])
    return out


def _rows(runs: list[RunView]) -> list[tuple[str, list[list[Entry]]]]:
    """Samples grouped by (sub-run, question) across runs: one row per question, one cell per run
    holding that run's samples of it (one per system)."""
    cells: dict[tuple[str, str], list[list[Entry]]] = {}
    for i, run in enumerate(runs):
        for s in run.entries:
            cells.setdefault((s.setting, s.qid or s.key), [[] for _ in runs])[i].append(s)
    return [(f"{k[0]}/{k[1]}" if k[0] else k[1], v) for k, v in cells.items()]


def settings(run: RunView) -> dict[str, Any]:
    cfg = run.config.get("config") or run.config.get("judging") or {}
    # The summary holds results under some of these names (per-system tables): only plain
    # settings are taken from it, for runs whose top level has no config.json (FairEval, Topical-Chat).
    summary = {k: v for k, v in run.summary.items() if k in SUMMARY_SETTINGS}
    out = {}
    for k in CONFIG_KEYS:
        for source in (cfg, run.config.get("judging") or {}, run.config, summary):
            if source.get(k) not in (None, [], {}):
                out[k] = source[k]
                break
    # Judge meta-benchmarks: each setting's panel, from its sub-run summary.
    panels = {
        n: s["panel"]
        for n, s in (run.summary.get("settings") or {}).items()
        if isinstance(s, dict) and isinstance(s.get("panel"), dict)
    }
    if panels:
        out["panels"] = panels
    return out


def _flat(prefix: str, v: Any, out: dict[str, str]) -> None:
    """Nested settings as one row per leaf (``panels.multi.agents``); lists of plain values
    on one line, anything else as compact JSON."""
    if isinstance(v, dict) and v:
        for k, x in v.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), x, out)
    elif isinstance(v, list) and v and all(isinstance(x, dict) and "name" in x for x in v):
        out[prefix] = ", ".join(str(x["name"]) for x in v)  # personas: their names (the prompts are in config.json)
    elif isinstance(v, list) and all(isinstance(x, (str, int, float, bool)) or x is None for x in v):
        out[prefix] = ", ".join(_pretty(x) if not isinstance(x, bool) else str(x) for x in v)
    elif isinstance(v, str) and prefix.endswith("url"):
        # config.json holds endpoints redacted already; a page is shared, so redact once more
        # (a run written by hand or by an older version).
        out[prefix] = redact_url(v) or ""
    else:
        out[prefix] = _pretty(v) if not isinstance(v, (dict, list)) else json.dumps(v, ensure_ascii=False)


def flat_settings(run: RunView) -> dict[str, str]:
    """The header settings, one row per leaf setting."""
    out: dict[str, str] = {}
    _flat("", settings(run), out)
    return out


def compared_settings(runs: list[RunView]) -> tuple[list[tuple[str, list[str]]], list[tuple[str, str]]]:
    """The runs' header settings, one row per setting: those that differ (a value per run; "–"
    where a run has none) and those all runs share."""
    flat = [flat_settings(run) for run in runs]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    differ = [(k, [f.get(k, "–") for f in flat]) for k in keys if len({f.get(k, "–") for f in flat}) > 1]
    # flat[0].get: a setting the first run lacks and the others show as "–" (None) is shared, not a KeyError
    same = [(k, flat[0].get(k, "–")) for k in keys if all(f.get(k, "–") == flat[0].get(k, "–") for f in flat)]
    return differ, same


def headline(run: RunView) -> list[dict[str, Any]] | dict[str, Any]:
    """The numbers for the header: the summary's own headline (rows per system or setting), else
    the evaluate summary's main numbers."""
    s = run.summary
    if isinstance(s.get("headline"), (list, dict)):
        return s["headline"]
    out: dict[str, Any] = {
        k: s[k]
        for k in ("n_samples", "n_ok", "n_failed", "verdicts", "mean_score", "order_disagreement_rate", "parse_errors")
        if k in s
    }
    for name, stat in (s.get("agreement") or {}).items():
        if isinstance(stat, dict) and "value" in stat:
            out[name] = stat["value"]
    return out


def build_view(
    run_dirs: list[Path],
    out: Path | None = None,
    *,
    context_chars: int | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Path:
    """Write one HTML page showing the given run directories side by side; returns its path.

    ``out`` defaults to ``view.html`` inside the run directory for one run, and to
    ``compare.html`` in the current directory for two or more: a comparison never replaces a
    run's own page (an ``out`` that names one is refused). ``context_chars`` caps each
    memory context shown (full-context systems give the model whole haystacks: a 500-question
    LongMemEval S run would make a page of hundreds of MB); what is left off is counted on the page.
    ``chunk_rows`` questions go in each chunk: the first is in the page, the others in
    ``<page>_data/`` beside it (:mod:`.paging`), loaded as they are opened.
    """
    if not run_dirs:
        raise NotARunDir("no run directory given")
    check_chunk_rows(chunk_rows)
    if out is not None and not str(out).strip():
        raise InputError(
            "--out is empty: give the HTML file to write (default: RUN_DIR/view.html; "
            "compare.html for two or more runs)"
        )
    if len(run_dirs) == 1:
        out = Path(out) if out is not None else Path(run_dirs[0]) / "view.html"
    else:
        out = Path(out) if out is not None else Path("compare.html")
        own = next((p for p in run_dirs if (Path(p) / "view.html").resolve() == out.resolve()), None)
        if own is not None:
            raise InputError(
                f"--out {out}: that is the page of the run {own}; a comparison of {len(run_dirs)} runs "
                "goes to a file of its own (default: compare.html in the current directory)"
            )
    if out.is_dir():  # checked before any run is read: a wrong --out costs nothing
        raise InputError(f"{out}: --out is a directory; give the HTML file to write (e.g. {out / 'view.html'})")
    write_view(out, load_rows(run_dirs, context_chars), chunk_rows)
    return out


class Loaded(NamedTuple):
    """The runs of one page, indexed, and their rows (one per question across the runs): each
    sample an index entry, read back whole when its chunk is rendered (.index)."""

    runs: list[RunView]
    rows: list[tuple[str, list[list[Entry]]]]
    colours: dict[str, str]
    context_chars: int | None = None


def load_rows(run_dirs: list[Path], context_chars: int | None = None) -> Loaded:
    runs = [index_run(Path(p)) for p in run_dirs]
    return Loaded(runs, _rows(runs), _colours(runs), context_chars)


def _part(page: Loaded, n: int, chunk_rows: int) -> list[tuple[int, str, list[list[SampleView]]]]:
    """Chunk ``n``'s rows with their samples read back whole (row ids count from the page's first)."""
    part = chunk_slice(n, chunk_rows)
    with Reader(page.context_chars) as reader:
        return [
            (i, k, [[reader.view(e) for e in cell] for cell in cells])
            for i, (k, cells) in enumerate(page.rows[part], (part.start or 0) + 1)
        ]


def render_chunk(page: Loaded, n: int, chunk_rows: int) -> str:
    """The HTML of chunk ``n``'s rows."""
    rows = _part(page, n, chunk_rows)
    return _env().get_template("rows.html.j2").render(runs=page.runs, colours=page.colours, part=rows)


def _search_texts(rows: list[tuple[str, list[list[Entry]]]]) -> list[str]:
    """Each row's search text; a row whose first sample was not indexed with its inputs' start
    (an audit's original, sorted first) reads it back."""
    with Reader() as reader:
        out = []
        for k, cells in rows:
            first = next(cell[0] for cell in cells if cell)
            text = first.inputs_text
            out.append(search_text(k, cells, text if text is not None else inputs_text(reader.view(first).inputs)))
            reader.cache.clear()
        return out


def write_view(out: Path, page: Loaded, chunk_rows: int = CHUNK_ROWS) -> None:
    """The page, then its chunks beside it (a page is never left pointing at missing chunks)."""
    check_chunk_rows(chunk_rows)
    n = n_chunks(len(page.rows), chunk_rows)
    source = {"static": static_source(out)}
    # Rendered one at a time as they are written (issue 38 item 3): never every chunk at once.
    _write_chunks(out, (render_chunk(page, i, chunk_rows) for i in range(1, n)))
    _write(out, page_parts(page, chunk_rows=chunk_rows, source=source))


def render_page(
    page: Loaded, *, chunk_rows: int, source: dict[str, str] | None = None, live: dict[str, Any] | None = None
) -> str:
    """The page: header, the list of every question, the first chunk of rows. ``source`` says where
    the other chunks are (``static``: the files' URL prefix; ``url``: the server's endpoint).
    ``live`` (the local server's pages) adds a link back to the run list and a script that reloads
    the page when the run's files change (``poll``: the URL of its status as JSON)."""
    return "".join(page_parts(page, chunk_rows=chunk_rows, source=source, live=live))


def page_parts(
    page: Loaded, *, chunk_rows: int, source: dict[str, str] | None = None, live: dict[str, Any] | None = None
) -> Iterator[str]:
    """:func:`render_page`'s text in parts of about :data:`PART_CHARS`, rendered as they are
    written (a big run's page is never held whole, nor the template's every piece of it)."""
    runs, rows = page.runs, page.rows
    samples = [s for r in runs for s in r.entries]
    facets = {
        "setting": sorted({s.setting for s in samples if s.setting}),
        "system": sorted({s.system for s in samples if s.system}),
        "category": sorted({s.category for s in samples if s.category}),
    }
    paging = {
        **(source or {}),
        "chunks": n_chunks(len(rows), chunk_rows),
        "text": _search_texts(rows),
    }
    return grouped(
        _env()
        .get_template("view.html.j2")
        .generate(
            runs=runs,
            rows=rows,
            part=_part(page, 0, chunk_rows),
            chunk_rows=chunk_rows,
            paging=paging,
            colours=page.colours,
            facets=facets,
            headline=headline,
            settings=flat_settings,
            compared=compared_settings(runs) if len(runs) > 1 else None,
            cards_compared=compared_cards(runs) if len(runs) > 1 else None,
            has_labels=any(s.disagrees is not None for s in samples),
            has_swap=any(s.swap for s in samples),
            live=live,
        )
    )


def render_index(root: Path, entries: list[RunEntry], *, live: dict[str, Any] | None = None) -> str:
    """The run list of a folder: one row per run, linking to its page; runs ticked are compared."""
    return _env().get_template("index.html.j2").render(root=str(root), entries=entries, live=live)


def build_index(
    root: Path, out: Path | None = None, *, context_chars: int | None = None, chunk_rows: int = CHUNK_ROWS
) -> Path:
    """Write the run list of ``root`` (default ``root/index.html``), and each run's own page
    (``view.html``) where it is missing or older than the run's files, so every link works."""
    root = Path(root)
    if not root.is_dir():
        raise NotARunDir(f"{root}: no such folder")
    out = Path(out) if out is not None else root / "index.html"
    check_chunk_rows(chunk_rows)
    if out.is_dir():
        raise InputError(f"{out}: --out is a directory; give the HTML file to write (e.g. {out / 'index.html'})")
    entries = list_runs(root)
    if not entries:
        raise NotARunDir(f"{root}: holds no run (no folder with config.json, summary.json or samples.jsonl)")
    for e in entries:
        page = Path(e.path) / "view.html"
        if e.status != "unreadable" and (not page.is_file() or page.stat().st_mtime < e.mtime):
            try:
                write_view(page, load_rows([Path(e.path)], context_chars), chunk_rows)
            except (NotARunDir, InputError) as err:  # a run being started, or a broken file: listed, not fatal
                e.detail = str(err)
                if e.status != "running":  # a run that has not written a run file yet stays "running"
                    e.status = "unreadable"
    _write(out, render_index(root, entries))
    return out


def _write(out: Path, html: str | Iterable[str]) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # Configured secrets are scrubbed (the page quotes answers and errors), each part on its
        # own (files.grouped); a disk that cannot take it raises RunWriteError: one line, no half page.
        atomic_write_lines(out, [html] if isinstance(html, str) else html)
    except RunWriteError:
        raise
    except OSError as e:
        raise InputError(f"{out}: cannot write the page ({e.strerror or e})") from None


def _write_chunks(out: Path, chunks: Iterable[str]) -> None:
    try:
        write_chunks(out, chunks)
    except RunWriteError:
        raise
    except OSError as e:
        raise InputError(f"{data_dir(out)}: cannot write the page's chunks ({e.strerror or e})") from None
