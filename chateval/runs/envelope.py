"""The envelope every run file shares: config.json, summary.json and each samples.jsonl record.

The fields every kind of run writes (``format_version``, status, usage, timing, accounting) are
typed here; what a kind adds on top (an evaluate verdict, a benchmark's per-system numbers) is its
payload, a subclass in :mod:`chateval.records` or on the benchmark. Every model allows extra
fields: a run file keeps whatever its writer put there, so nothing a run wrote is lost on reading.

Writers validate through these models and write the dict they built with ``format_version`` put
first (:func:`stamp`): the models check the shape, they do not reshape (no key order, number
type or default changes what a run writes). This lives with the run directory, below the
payload records, so :class:`~chateval.runs.directory.RunDir` can validate what it writes.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from ..util.errors import InputError

# 1: the first versioned format (config, summary and samples carry it). Files written before it
# have no ``format_version``; they read as version 0 and load the same way.
FORMAT_VERSION = 1

M = TypeVar("M", bound=BaseModel)


class Envelope(BaseModel):
    """Common to every run file. Extra fields are kept (``model_extra``)."""

    model_config = ConfigDict(extra="allow")

    format_version: int = 0  # 0: written before run files carried a version
    _order: tuple[str, ...] = PrivateAttr(default=())  # the keys' order in the file (see data())

    @field_validator("format_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        # An integer this chateval knows, exactly: "1" or 1.0 is not a version it wrote, and a
        # newer version may mean fields this one would misread.
        if type(value) is not int or not 0 <= value <= FORMAT_VERSION:
            raise ValueError(
                f"{value!r} is not a format version this chateval reads (it reads {FORMAT_VERSION}, and files "
                "written before versions, without one); was it written by a newer chateval?"
            )
        return value

    def get(self, name: str, default: Any = None) -> Any:
        """A field or extra field by name (a payload's optional fields, one call for both)."""
        value = getattr(self, name, None) if name in type(self).model_fields else (self.model_extra or {}).get(name)
        return default if value is None else value

    def data(self) -> dict[str, Any]:
        """The record as written: extras included, unset defaults left out, keys in the file's order."""
        out = self.model_dump(mode="json", exclude_unset=True)
        first = {k: out[k] for k in self._order if k in out}
        return first | out


class ConfigRecord(Envelope):
    """config.json: what decides the results (``judging``, hashed for --resume) and versions."""

    kind: str | None = None  # written by audit runs only; read_run infers the others
    config_hash: str | None = None
    judging: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] | None = None  # evaluate and its sub-runs: the judge's settings
    benchmark: str | None = None
    model: str | None = None
    offline: bool | None = None


class SampleRecord(Envelope):
    """One line of samples.jsonl: one sample (evaluate) or one unit (a benchmark)."""

    status: str = "ok"  # "ok" or "failed"; --resume keeps "ok" lines only
    key: str | None = None  # a benchmark unit's key (evaluate: ``id``)
    error: str | None = None
    usage: dict[str, Any] | None = None  # the unit's model usage (UsageTotals fields)
    wall_s: float | None = None  # a benchmark unit's wall time

    # What the viewer shows of a record (chateval.view): a benchmark's record type overrides these.
    def samples(self) -> list[dict[str, Any]]:
        """The viewer's samples of this record, one dict each: the record itself; a record that
        holds several questions (a conversation's) splits here."""
        return [self.data()]

    def question_of(self, sample: dict[str, Any]) -> str | None:
        """The question ``sample`` answers: samples of several systems (or runs) sharing it are
        shown side by side. None: the viewer takes question_id, case_id, id or key."""
        return None

    def card(self) -> dict[str, Any]:
        """Fields the viewer shows on this record's card, by label, besides those it finds itself
        (an answer, a context, a debate): a benchmark's record type names its own numbers here."""
        return {}


class SummaryRecord(Envelope):
    """summary.json: status, usage, timing and the accounting every run writes, and the payload."""

    # The headline rows' values are rates, shown as percentages (a correlation is not).
    headline_rates: ClassVar[bool] = True

    kind: str | None = None  # written by calibrate and audit; read_run infers the others
    benchmark: str | None = None
    complete: bool | None = None
    offline: bool | None = None
    note: str | None = None
    n_units: int | None = None
    n_failed: int | None = None
    n_expected: int | None = None
    n_missing: int | None = None
    missing_keys: list[str] = Field(default_factory=list)
    unreadable_lines: int | None = None
    usage: dict[str, Any] | None = None  # UsageTotals fields, or per system (head-to-head)
    wall_time_s: float | None = None
    wall_time_attempts_s: list[float] = Field(default_factory=list)
    headline: list[dict[str, Any]] | str | None = None  # rows per system/setting; calibrate: its conclusion


def check(model: type[M], data: dict[str, Any], where: str) -> M:
    """``data`` as ``model``, or an InputError of one line naming ``where`` and the field."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a run record (a JSON {type(data).__name__}, not an object)")
    try:
        out = model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(map(str, err["loc"])) or "(record)"
        raise InputError(f"{where}: field '{field}': {err['msg'].lower()}") from None
    if isinstance(out, Envelope):
        out._order = tuple(data)
    return out


def stamp(data: dict[str, Any], model: type[Envelope] = Envelope) -> dict[str, Any]:
    """``data`` checked against ``model`` and carrying the format version (first, unless the
    writer set one itself: audit and calibration records already do). Returns a new dict."""
    if not isinstance(data, dict):
        raise TypeError(f"a run record is a JSON object, not {type(data).__name__}")
    try:
        model.model_validate(data)
    except ValidationError as e:  # a writer's bug, not bad input: say which field
        err = e.errors()[0]
        raise ValueError(f"{model.__name__}: field '{'.'.join(map(str, err['loc']))}': {err['msg']}") from None
    return dict(data) if "format_version" in data else {"format_version": FORMAT_VERSION, **data}
