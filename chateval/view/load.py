"""Read a run directory (and the sub-runs a benchmark writes) into what the viewer shows.

Only the run directory is read: config.json, samples.jsonl, summary.json, report.md and the PNG
plots (how one record becomes samples is :mod:`.samples`).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..models.usage import UsageTotals
from ..records.audit import AuditedVariant, AuditSummary, is_audit, read_summary
from ..records.lazy import LazyRecords
from ..records.run import RUN_FILES, SAMPLES, NotARunDir, Run, read_run
from ..util.errors import InputError
from ..util.paths import inside
from .index import Entry, Scan, scan, usages
from .samples import SampleView, sample_views

__all__ = ["RUN_FILES", "NotARunDir", "RunView", "check_inside", "load_run"]

VIEWED = (*RUN_FILES, "report.md")  # with the *.png plots: every file a run's page reads


class RunView(BaseModel):
    path: str
    name: str
    config: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(default_factory=dict)
    reports: dict[str, str] = Field(default_factory=dict)  # setting -> report.md text
    plots: list[tuple[str, str]] = Field(default_factory=list)  # (relative name, base64 PNG)
    samples: list[SampleView] = Field(default_factory=list)  # load_run: every sample, whole
    entries: list[Any] = Field(default_factory=list)  # index_run: an index Entry per sample, not the sample
    n_samples: int = 0
    usage: dict[str, Any] = Field(default_factory=dict)  # summed over every record read
    n_records: int = 0
    audit: AuditSummary | None = None  # an audit run (chateval audit): its flip rates and compared verdicts
    headline_rates: bool = True  # the headline's values are rates (shown as %): its summary type says


def check_inside(path: Path) -> None:
    """Every file the viewer reads from a run (and each sub-run folder) is the run's own: one that
    is a link leading out of the run folder (a report.md -> ~/.ssh/id_rsa) is refused, naming it,
    so no other local file reaches a page (the written one or the served one)."""
    path = Path(path)
    if not path.is_dir():
        return  # read_run says so
    dirs = [path] + [p for p in sorted(path.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    for d in dirs:
        files = [f for f in [*(d / n for n in VIEWED), *sorted(d.glob("*.png"))] if f.exists() or f.is_symlink()]
        for f in [d, *files] if files else []:
            if not inside(f, path):
                raise InputError(
                    f"{f}: a link that leads outside the run folder {path}; the viewer reads only the run's own files"
                )


def load_run(path: Path) -> RunView:
    """A run directory, its benchmark sub-runs (one level down) and their plots."""
    path = Path(path)
    check_inside(path)
    run = read_run(path)  # typed; a bad file is one line naming it
    view = _run_view(path, run)
    total = UsageTotals()  # summed as the records go by: no list of every usage block
    for setting, d in [("", run), *run.runs.items()]:
        if (d.path / "report.md").is_file():
            view.reports[setting] = (d.path / "report.md").read_text(encoding="utf-8", errors="replace")
        for png in sorted(d.path.glob("*.png")):
            name = f"{setting}/{png.name}" if setting else png.name
            view.plots.append((name, base64.b64encode(png.read_bytes()).decode("ascii")))
        view.n_records += len(d.records)
        # Each record once, then let go: the page keeps its sample views, not every record's model.
        for rec in d.records.release() if isinstance(d.records, LazyRecords) else d.records:
            view.samples += sample_views(rec, setting)
            for u in usages(rec.data()):
                total.merge(UsageTotals.model_validate(u))
    view.usage = total.model_dump()
    view.n_samples = len(view.samples)
    if is_audit(view.summary):
        view.audit = read_summary(path)
        view.samples.sort(key=audit_order)
    return view


def _run_view(path: Path, run: Run) -> RunView:
    """The page's view of a run before its samples: names, config, summary."""
    view = RunView(
        path=str(path),
        name=path.name or str(path),
        config=run.config.data() if run.config else {},
        summary=run.summary.data() if run.summary else {},
    )
    view.headline_rates = type(run.summary).headline_rates if run.summary else True
    return view


def audit_order(s: SampleView | Entry) -> tuple[str, bool, str]:
    """Each item's original first: the row shows its inputs, the variants follow."""
    return (s.qid, s.system != "original", s.key)


def index_run(path: Path) -> RunView:
    """A run directory as :func:`load_run` reads it, but each sample an index :class:`Entry`
    (the list's fields and where its record is), read in one pass over samples.jsonl that holds
    one record at a time (issue 38 item 3): the page's rows read their records back (.index)."""
    path = Path(path)
    check_inside(path)
    run = read_run(path, samples=False)  # config and summaries, typed; the samples are read below
    view = _run_view(path, run)
    dirs = [(setting, d.path, d.kind) for setting, d in [("", run), *run.runs.items()]]
    del run  # its typed summary is a second copy of view.summary
    total = UsageTotals()
    scans: list[tuple[Path, Scan]] = []
    first_of: set[tuple[str, str]] = set()
    for setting, d_path, kind in dirs:
        if (d_path / "report.md").is_file():
            view.reports[setting] = (d_path / "report.md").read_text(encoding="utf-8", errors="replace")
        for png in sorted(d_path.glob("*.png")):
            name = f"{setting}/{png.name}" if setting else png.name
            view.plots.append((name, base64.b64encode(png.read_bytes()).decode("ascii")))
        scans.append((d_path / SAMPLES, scan(d_path, kind, setting, total, first_of)))
    # The errors read_run would raise, in its order: each file's bad lines, then envelopes; then payloads.
    for where, s in scans:
        err = s.json_error(where) or s.envelope_error
        if err is not None:
            raise err
    for _, s in scans:
        if s.payload_error is not None:
            raise s.payload_error
    for _, s in scans:
        view.entries += s.entries
        view.n_records += s.n_records
    view.usage = total.model_dump()
    view.n_samples = len(view.entries)
    if is_audit(view.summary):
        view.audit = audit_head(view.summary, path)
        view.entries.sort(key=audit_order)
    return view


def audit_head(summary: dict[str, Any], path: Path) -> AuditSummary:
    """An audit's summary typed without its ``variants``, each checked and let go: the page lists
    them from the summary's own dicts (a second copy of every variant as a model cost ~1.3 KiB
    each; issue 38 item 3). A summary that is not an audit's is refused as ``read_summary`` says."""
    variants = summary.get("variants", [])
    try:
        if not isinstance(variants, list):
            raise ValueError(variants)
        head = AuditSummary.model_validate({**summary, "variants": []})
        for v in variants:
            AuditedVariant.model_validate(v)
    except (ValidationError, ValueError):
        return read_summary(path)  # the error, naming the file and field (or the summary read anew)
    return head
