from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _shared_data() -> Path:
    """The shared data sets: $CHATEVAL_DATA_DIR, else ../shared/data beside the repository."""
    for cand in (os.environ.get("CHATEVAL_DATA_DIR"), REPO.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return REPO.parent / "shared" / "data"


SHARED = _shared_data()
NO_SHARED_REASON = (f"needs the shared data sets (not found at {SHARED}); set CHATEVAL_DATA_DIR to the folder "
                    "holding longmemeval/, locomo/, msc/, ... or put shared/data beside the repository")


def shared(*parts: str) -> Path:
    """A path in the shared data; the test is skipped (with the reason) when it is not there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path.relative_to(SHARED) if path.is_relative_to(SHARED) else path}: {NO_SHARED_REASON}")
    return path


def needs_shared(*parts: str) -> pytest.MarkDecorator:
    """Mark for tests (or a whole module via ``pytestmark``) that read a shared data set."""
    path = SHARED.joinpath(*parts)
    return pytest.mark.skipif(not path.exists(), reason=f"{'/'.join(parts)}: {NO_SHARED_REASON}")


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """Module-scoped fixtures (runs made once per file) start before the per-test fixture below:
    they get a cache of their own too, never the user's real one (which may be an old-format
    cache chateval refuses)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("CHATEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("session-cache")))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never read or write the user's real completion cache from tests."""
    monkeypatch.setenv("CHATEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CHATEVAL_API_KEY", raising=False)
    monkeypatch.delenv("CHATEVAL_BASE_URL", raising=False)


# Built-in systems that need an outside service to talk to (test_http_agent.py covers them), or a
# model endpoint rather than the offline model (mem0's and LangMem's own prompts: test_mem0.py, test_langmem.py).
NEEDS_SERVICE = {"http", "mem0", "langmem"}


def local_systems() -> list[str]:
    """The built-in memory systems that run in-process (not ones registered by tests or plugins)."""
    import chateval.memory.systems  # noqa: F401  (registers the built-in systems)
    from chateval.memory import MEMORY_SYSTEMS

    return [n for n in MEMORY_SYSTEMS.names()
            if n not in NEEDS_SERVICE and MEMORY_SYSTEMS.get(n).__module__.startswith("chateval.")]


def read_jsonl(path: Path) -> list[dict]:
    # At "\n" only, as chateval reads JSONL: splitlines() also splits inside strings (U+2028, ...).
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
