"""An on-disk store of data, never code: one SQLite file of (key, value) rows whose values are
bytes the caller decodes as data (JSON text, float32 vectors). The completion and embedding caches
use it.

Why not diskcache: it pickles values (and keys), so anyone who can write the cache folder (a
shared or NFS mount, another user, a copied cache) runs code in the next chateval that reads an
entry. Nothing here unpickles, evaluates or imports anything read from the file.

A folder that holds something else is refused up front (``check``), one error naming it: an old
diskcache store (its pickles cannot be read safely, so they are not migrated: delete or move the
folder), or a file that is not this store (random bytes, another program's database).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from .errors import ConfigError

FILE = "store.sqlite3"
OLD_DISKCACHE = "cache.db"  # diskcache's index, which holds pickles
# PRAGMA application_id of the file (bytes 68-71 of its header): "chev". Set before WAL mode is
# on, so it is in the main file from the start and ``check`` reads it without opening SQLite.
APPLICATION_ID = 0x63686576
_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 60.0  # other processes (benchmark workers, Ray actors) writing the same store


class StoreError(ConfigError):
    """The store's folder holds something this store does not read (exit 2, naming it)."""


class DataStore:
    """``key`` (text) -> ``value`` (bytes) in ``directory/store.sqlite3``. Created on first write
    only; ``check`` reads an existing one's header and creates nothing."""

    def __init__(self, directory: str | Path, what: str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILE
        self.what = what  # "completion cache", "embedding cache": named in errors
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        # To another process (a Ray worker): the folder; it opens its own connection there.
        return {"directory": self.directory, "what": self.what}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["directory"], state["what"])  # type: ignore[misc]

    def check(self) -> None:
        """Raise StoreError if the folder holds an old pickle store or a file that is not a store
        of ours (or one whose header or table index is damaged); a missing folder or store is fine
        (created on first use). An existing store is opened, which writes nothing to it."""
        self._check_files()
        if self.path.exists() and self.path.stat().st_size > 0:
            self._open_checked()

    def _check_files(self) -> None:
        d = self.directory
        if d.exists() and not d.is_dir():
            raise StoreError(f"{d}: the {self.what} folder is a file; give a folder (or remove the file)")
        if (d / OLD_DISKCACHE).exists():
            raise StoreError(
                f"{d}: an old-format {self.what} (diskcache, whose entries are Python pickles that can run "
                f"code when read), which chateval no longer reads; delete or move that folder (its entries "
                "cannot be converted safely) and a new cache starts there, or give another folder"
            )
        if not self.path.exists():
            return
        try:
            with open(self.path, "rb") as f:
                head = f.read(100)
        except OSError as e:
            raise StoreError(f"{self.path}: the {self.what} cannot be read ({e.strerror or e})") from None
        if head and (head[:16] != _HEADER or int.from_bytes(head[68:72], "big") != APPLICATION_ID):
            raise StoreError(
                f"{self.path}: not a chateval {self.what} (damaged, or another program's file); "
                "delete or move it and a new one starts there"
            )

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            self._check_files()
            self._open_checked()
        assert self._db is not None
        return self._db

    def _open_checked(self) -> None:
        if self._db is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            db = None
            try:
                db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
                if db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # a new file: ours from its header on
                db.execute(
                    "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
                )
                db.execute("PRAGMA journal_mode = WAL")  # readers do not wait for a writer
                db.execute("PRAGMA synchronous = NORMAL")  # a cache: a lost last write is only a call made again
                db.execute("SELECT 1 FROM entries LIMIT 1").fetchall()  # the schema and the table's root page read
            except sqlite3.Error as e:
                if db is not None:
                    db.close()
                raise self._error(e) from None
            self._db = db

    def _error(self, e: sqlite3.Error) -> StoreError:
        return StoreError(f"{self.path}: the {self.what} cannot be used ({e}); delete or move it to start a new one")

    def _run(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            db = self._open()
            try:
                return db.execute(sql, args).fetchall()
            except sqlite3.Error as e:
                raise self._error(e) from None

    def get(self, key: str) -> bytes | None:
        rows = self._run("SELECT value FROM entries WHERE key = ?", (key,))
        value = rows[0][0] if rows else None
        return bytes(value) if isinstance(value, (bytes, memoryview)) else None

    def __contains__(self, key: str) -> bool:
        return bool(self._run("SELECT 1 FROM entries WHERE key = ?", (key,)))

    def set(self, key: str, value: bytes) -> None:
        self._run("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", (key, sqlite3.Binary(value)))

    def set_many(self, items: Iterable[tuple[str, bytes]]) -> None:
        """One transaction for many rows (an embedding batch): far cheaper than a commit each."""
        rows = [(k, sqlite3.Binary(v)) for k, v in items]
        with self._lock:
            db = self._open()
            try:
                with db:  # BEGIN ... COMMIT (or ROLLBACK)
                    db.execute("BEGIN")
                    db.executemany("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", rows)
            except sqlite3.Error as e:
                raise self._error(e) from None

    def delete(self, key: str) -> None:
        self._run("DELETE FROM entries WHERE key = ?", (key,))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
