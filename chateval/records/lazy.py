"""A run's samples.jsonl records, typed when first read.

Validating every nested debate of a 10,000-record run up front cost more than parsing its JSON
(issue 38): a viewer or report that lists a few fields paid for all of them. So ``read_run``
parses every line (a line that is not JSON is an error then, naming it) and checks each record's
envelope (``format_version``, ``status``, ``key``, ``error``, ``usage``, ``wall_s``: what resume,
gates and counts rely on), and the record's own type (a verdict, a debate, a benchmark's
numbers) is validated when the record is first read, ``run.records[i]`` or iterating. An error
then is the same one line naming the file and line. :meth:`LazyRecords.check_all` (or
``read_run(..., lazy=False)``) validates every record now.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from ..runs.envelope import FORMAT_VERSION, SampleRecord, check

R = TypeVar("R", bound=SampleRecord)

ENVELOPE_FIELDS = tuple(SampleRecord.model_fields)
_NONE = type(None)
# The exact Python types of a valid envelope field, checked without building a model (pydantic's
# fixed cost per record is more than parsing a small record). A value of any other type goes to
# pydantic, which accepts it or says what is wrong, so the fast path never lets through what the
# model would not; it is off when the envelope gains a field it does not know.
FAST_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,),
    "key": (str, _NONE),
    "error": (str, _NONE),
    "usage": (dict, _NONE),
    "wall_s": (float, int, _NONE),
}
_FAST = set(ENVELOPE_FIELDS) == {"format_version", *FAST_TYPES}


def _plainly_valid(data: dict[str, Any]) -> bool:
    version = data.get("format_version", 0)
    if type(version) is not int or not 0 <= version <= FORMAT_VERSION:
        return False
    for k, types in FAST_TYPES.items():
        if k in data and type(data[k]) not in types:
            return False
    return True


def check_envelope(data: dict[str, Any], where: str) -> None:
    """The fields every record shares, checked now (cheap: the payload is left out): an
    InputError of one line naming ``where`` and the field."""
    if not (_FAST and _plainly_valid(data)):
        check(SampleRecord, {k: data[k] for k in ENVELOPE_FIELDS if k in data}, where)


class LazyRecords(Sequence[R], Generic[R]):
    """A read-only list of records parsed from ``where`` (a samples.jsonl), each validated as
    ``model`` on first access and kept; ``lines`` are (line number, parsed object)."""

    __slots__ = ("_model", "_where", "_nos", "_raw", "_done")

    def __init__(self, model: type[R], where: str, lines: list[tuple[int, dict[str, Any]]]) -> None:
        self._model = model
        self._where = where
        self._nos = [no for no, _ in lines]
        self._raw: list[dict[str, Any] | None] = [data for _, data in lines]
        self._done: list[R | None] = [None] * len(lines)

    def __len__(self) -> int:
        return len(self._nos)

    @overload
    def __getitem__(self, i: int) -> R: ...

    @overload
    def __getitem__(self, i: slice) -> list[R]: ...

    def __getitem__(self, i: int | slice) -> R | list[R]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        rec = self._done[i]
        if rec is None:
            data = self._raw[i]
            assert data is not None  # dropped only once validated
            rec = self._done[i] = check(self._model, data, f"{self._where}:{self._nos[i]}")
            self._raw[i] = None  # the record holds what it needs
        return rec

    def __iter__(self) -> Iterator[R]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyRecords, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a list's equality, unhashable like one

    def __repr__(self) -> str:
        return f"<{len(self)} {self._model.__name__} records of {self._where}>"

    def release(self) -> Iterator[R]:
        """Each record validated and yielded once, then let go (neither its parsed line nor its
        model is kept): for a reader that reads every record once and keeps its own small view
        of it (the viewer's page), so the run's records are never all held as models at once.
        The records cannot be read again afterwards."""
        for i in range(len(self)):
            rec = self[i]
            self._done[i] = None
            yield rec

    def line_of(self, i: int) -> int:
        """The samples.jsonl line record ``i`` was read from."""
        return self._nos[i]

    def check_all(self) -> None:
        """Validate every record now: the first bad one is an InputError naming its line."""
        for _ in self:
            pass
