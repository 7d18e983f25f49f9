"""Typed records written to and read from run directories: ``read_run`` (any run), the judged
payload (evaluate), the audit records; the envelope every run file shares is in
:mod:`chateval.runs.envelope` (below, so the run writer validates through it)."""

from ..runs.envelope import FORMAT_VERSION, ConfigRecord, Envelope, SampleRecord, SummaryRecord
from .judged import EvaluateSummary, JudgedRecord
from .run import NotARunDir, Run, RunTypes, read_run, run_kind

__all__ = [
    "FORMAT_VERSION",
    "ConfigRecord",
    "Envelope",
    "EvaluateSummary",
    "JudgedRecord",
    "NotARunDir",
    "Run",
    "RunTypes",
    "SampleRecord",
    "SummaryRecord",
    "read_run",
    "run_kind",
]
