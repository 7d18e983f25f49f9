"""A page that loads its records in chunks: the page holds the list of questions (what the list and
the filters need) and the first chunk of rows; the other chunks are loaded when a question in them
is picked or scrolled to. A written page keeps its chunks beside it (``view.html`` ->
``view_data/chunk-00001.js``); the local server answers them as JSON (``/api/chunk``).

A written chunk is a script, because a page opened from ``file://`` may not ``fetch()`` a file in
Chromium, but may load a script beside it. Its one statement hands the page a JSON object (the
rows' HTML, rendered by the same autoescaped template as the page: a record's text is escaped
there, never markup or script) to ``window.chatevalChunk``. JSON is a JavaScript literal (with
U+2028 and U+2029 escaped for older engines), and an external script is not read by the HTML
parser, so ``</script>`` in it ends nothing (the JSON inlined in the page is Jinja's ``tojson``, which
escapes ``<``, ``>``, ``&`` and quotes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..runs.files import atomic_write
from ..util.errors import InputError

CHUNK_ROWS = 100  # questions per chunk: a LongMemEval full-context row is ~0.5 MB, an evaluate row ~7 KB
MAX_CHUNK_ROWS = 1_000_000
SEARCH_CHARS = 160  # of each input, in the list's search text (the whole text of loaded rows is searched too)
_CHUNK_FILE = re.compile(r"chunk-\d{5,}\.js")


def check_chunk_rows(n: int) -> int:
    if not 1 <= n <= MAX_CHUNK_ROWS:
        raise InputError(f"--chunk-size must be 1 to {MAX_CHUNK_ROWS:,} questions, not {n}")
    return n


def n_chunks(n_rows: int, chunk_rows: int) -> int:
    return max(1, -(-n_rows // chunk_rows))


def chunk_slice(n: int, chunk_rows: int) -> slice:
    return slice(n * chunk_rows, (n + 1) * chunk_rows)


def data_dir(page: Path) -> Path:
    """The folder of a written page's chunks: ``view.html`` -> ``view_data``."""
    return page.with_name(f"{page.stem}_data")


def chunk_file(n: int) -> str:
    return f"chunk-{n:05d}.js"


def static_source(page: Path) -> str:
    """The chunks' URL prefix, relative to the page (a page name is quoted: ``my run.html``)."""
    return quote(data_dir(page).name) + "/chunk-"


def chunk_script(n: int, html: str) -> str:
    """A chunk file's text: one call with a JSON literal."""
    data = json.dumps({"n": n, "html": html}, ensure_ascii=False, separators=(",", ":"))
    data = data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"window.chatevalChunk({int(n)},{data});\n"


def write_chunks(page: Path, chunks: Iterable[str], first: int = 1) -> list[Path]:
    """Write chunks ``first``.. beside ``page`` and remove the chunk files an earlier, longer page
    left (only files named as chunks: nothing else in the folder is touched). No chunk to write:
    no folder (a small run's page is whole). ``chunks`` may be a generator: each chunk is
    rendered, written and let go before the next, so a large page's chunks are never all held."""
    folder = data_dir(page)
    written: list[Path] = []
    for i, html in enumerate(chunks, first):
        if not written:
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / chunk_file(i)
        atomic_write(path, chunk_script(i, html))  # secrets scrubbed as on the page
        written.append(path)
    if folder.is_dir() and not folder.is_symlink():
        keep = {p.name for p in written}
        for old in folder.iterdir():
            if _CHUNK_FILE.fullmatch(old.name) and old.name not in keep and old.is_file():
                old.unlink()
        if not any(folder.iterdir()):
            folder.rmdir()
    return written


def search_text(key: str, cells: Sequence[Sequence[Any]], first_inputs: str | None = None) -> str:
    """What the list's search box matches for a question not loaded yet: its key, category,
    systems and the start of each input (lower-cased). ``first_inputs``: :func:`inputs_text` of
    the row's first sample, if known (else read from its ``inputs``)."""
    parts = [key]
    for samples in cells:
        for s in samples:
            parts += [s.category, s.system, s.status]
    if first_inputs is None:
        first = next((samples[0] for samples in cells if samples), None)
        first_inputs = inputs_text(first.inputs) if first is not None else ""
    parts.append(first_inputs)
    return " ".join(p for p in parts if p).lower()


def inputs_text(inputs: dict[str, Any]) -> str:
    """The start of each input of a row's first sample, as the list's search text holds it (an
    index entry keeps this, not the inputs)."""
    parts = [
        (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))[:SEARCH_CHARS]
        for k, v in inputs.items()
        if k != "meta" and v is not None
    ]
    return " ".join(p for p in parts if p)
