"""Workarounds for graphiti-core's Kuzu driver (pinned graphiti-core 0.30.2, kuzu 0.11.3).

The one place they live. ``tests/test_zep.py`` asserts that each problem still exists in the
installed version; when such a test fails, upstream has fixed it and the matching workaround
here can go.

1. ``KuzuDriver`` never sets ``_database``. ``Graphiti.add_episode(group_id=...)`` compares
   the group id with ``driver._database`` and fails with AttributeError before doing anything,
   so explicit group ids (one graph partition per conversation) are unusable.
   Fix: give the driver a database name. Kuzu has one database per file and graphiti's
   ``clone()`` keeps the same driver, so the group id still only partitions by property.
2. ``KuzuDriver.build_indices_and_constraints()`` is a no-op (its graph-operations object has
   the real one, which the driver does not call), so the full-text indexes graphiti's BM25
   search queries (``QUERY_FTS_INDEX``) are never created and every search fails.
   Fix: create graphiti's own Kuzu full-text indexes (``get_fulltext_indices``) unless they
   exist — a persisted database already has them, and Kuzu has no ``IF NOT EXISTS`` for them.
3. ``KuzuDriver(db)`` takes no database options, and Kuzu's default ``max_db_size`` reserves
   8 TB of virtual address space per database: about 15 open databases exhaust a 47-bit
   address space ("Mmap for size 8796093022208 failed"), e.g. a benchmark running systems in
   parallel. Fix: swap the driver's database for one opened with ``KUZU_MAX_DB_SIZE``.
4. graphiti hands Kuzu's full-text search the query verbatim (it sanitises only Lucene
   queries), and Kuzu keeps punctuation on query words: in "Where does the user live?" the
   word "live?" matches nothing, so BM25 loses the last word of every question.
   Fix: ``fulltext_safe(query)`` — punctuation becomes spaces — for searches on Kuzu.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, cast

import kuzu
from graphiti_core.driver.driver import GraphProvider
from graphiti_core.driver.kuzu_driver import KuzuDriver
from graphiti_core.graph_queries import get_fulltext_indices

KUZU_DATABASE_NAME = ""  # graphiti's default group id; any name works, Kuzu ignores it
KUZU_MAX_DB_SIZE = 1 << 36  # 64 GiB per database (a power of two, as Kuzu requires)


def open_kuzu(path: str | Path | None = None) -> KuzuDriver:
    """An embedded Kuzu graph (in memory, or a database file that persists), with fixes 1 and 3."""
    where = ":memory:" if path in (None, "", ":memory:") else str(Path(path).expanduser())
    if where != ":memory:":
        Path(where).parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # graphiti deprecates its Kuzu backend (upstream Kuzu is archived); it is still the
        # only embedded graph database graphiti supports, hence the default here.
        warnings.simplefilter("ignore", DeprecationWarning)
        driver = KuzuDriver(db=":memory:")
    # Fix 3: the driver's own (unsized) database is replaced before anything is written to it.
    close_kuzu(driver)
    driver.db = kuzu.Database(where, max_db_size=KUZU_MAX_DB_SIZE)
    driver.setup_schema()
    driver.client = kuzu.AsyncConnection(driver.db, max_concurrent_queries=1)
    set_database_name(driver)
    return driver


def fulltext_safe(query: str) -> str:
    """Fix 4: the query with punctuation (but not apostrophes or hyphens) turned into spaces."""
    return " ".join(re.sub(r"[^\w\s'-]", " ", query).split())


def set_database_name(driver: KuzuDriver) -> None:
    """Fix 1: the attribute ``Graphiti._resolve_request_scope`` reads."""
    if not hasattr(driver, "_database"):
        driver._database = KUZU_DATABASE_NAME


async def fulltext_index_names(driver: KuzuDriver) -> set[str]:
    result, _, _ = await driver.execute_query("CALL SHOW_INDEXES() RETURN *")
    rows = cast(list[dict[str, Any]], result)  # one statement: one list of rows (not a list per statement)
    return {row["index_name"] for row in rows if row.get("index_type") == "FTS"}


async def ensure_fulltext_indexes(driver: KuzuDriver) -> list[str]:
    """Fix 2: create graphiti's Kuzu full-text indexes that are missing; returns their names.
    Must run before the first ingest or search (Kuzu updates the indexes on later writes)."""
    existing = await fulltext_index_names(driver)
    created = []
    for query in get_fulltext_indices(GraphProvider.KUZU):
        match = re.search(r"CREATE_FTS_INDEX\('\w+',\s*'(\w+)'", query)
        name = match.group(1) if match else query
        if name not in existing:
            await driver.execute_query(query)
            created.append(name)
    return created


def close_kuzu(driver: KuzuDriver) -> None:
    """Close the connection and the database now. ``KuzuDriver.close()`` leaves both to the
    garbage collector, which keeps a persisted database file open (and its WAL unmerged)."""
    driver.client.close()
    driver.db.close()
