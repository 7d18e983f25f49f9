"""Every code block of README.md and of the manual in docs/*.md is run, or skipped with its reason
written next to it, so a snippet cannot drift from the API (issues 27, 29).

A block is marked by HTML comments just before it:
  <!-- readme-test: skip (REASON) -->        the whole block is not run
  <!-- readme-test: skip 1,3 (REASON) -->    those commands of a shell block are not run
  <!-- readme-test: file PATH -->            the block is saved as PATH (and run, for Python)
  <!-- readme-test: run COMMAND -->          a command run after the block (e.g. one that reads PATH)
  <!-- readme-test: fake-server -->          the block's `openai/...` models are served by the fake
                                             OpenAI server on 127.0.0.1 (OPENAI_BASE_URL, a test key);
                                             so are `VAR_BASE_URL=... VAR_API_KEY=... chateval ...`
                                             prefixes (a plugin provider's variables)
  <!-- readme-test: extending-table -->      the block runs each row of the README's "Extending
                                             chateval" table as a whole command (checked here)
Unmarked shell and Python blocks run; any other unmarked block fails this test. Skips are pytest
skips carrying the README's reason (`pytest -rs` lists them), never silent.

How they run, in one scratch folder per session holding `examples/` and small fixtures under the
names the README uses for a user's own files (my_answers.jsonl, preds.jsonl) and
`../shared/data` when the shared data is present (else the commands that read it skip); the
default data folder (XDG_CACHE_HOME in the scratch folder, CHATEVAL_DATA_DIR unset) filled by a
real `chateval data get longmemeval-oracle longmemeval-s` from a local mirror (CHATEVAL_DATA_MIRROR,
chateval.testing.file_server) serving small fixtures under the catalog's file names, plus a small
LoCoMo file as `locomo/locomo10.json` and small graded answer sets under `locomo_judged/` (their
checksums are pinned, so a fixture cannot come through `data get`), so commands that name a data set (`--data longmemeval-s`, `--data locomo10.json`)
run as a user's would after `data get`, and a name `data get` does not write fails:
- `chateval ...` as the console script would run it (`python -P -m chateval.cli`: the working
  directory is NOT put on the import path by Python), with `--limit 1` added to `evaluate` and
  `bench` commands that give none and `--embedder hash` to memory benchmarks and `memory ask`
  commands that give none
  (time: the whole file stays well under a minute; MiniLM is tested elsewhere);
- `python examples/http_agent.py --port P` in the background for the rest of its block, on a
  free port (the block's port number is replaced);
- Python blocks as a script in the scratch folder (`python snippet.py`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chateval.testing.fake_openai import DEFAULT_REPLY, FakeOpenAIServer
from chateval.testing.file_server import FileServer
from chateval.testing.schema_reply import schema_responder

from .conftest import FIXTURES, _shared_data, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]  # the front door, then the manual
MARK = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->$")
SKIP = re.compile(r"^skip(?:\s+([\d,\s]+?))?\s*\((.+)\)$")
MEMORY_BENCHES = {"longmemeval", "locomo", "head2head", "teafarm", "msc-response"}
TIMEOUT = 120
DATA_ENV: dict[str, str] = {}  # the scratch data folder and the local mirror (set by the `work` fixture)
JUDGED = {  # the data folder's locomo_judged/ files (catalog name -> fixture in tests/fixtures/rejudge)
    "fc_gpt-4o-mini_cot.json": "evermemos_tiny.json",
    "fc_gpt-4o-mini_memos.json": "evermemos_tiny.json",
    "zep_locomo_grades.json": "zep_tiny.json",
    "ap_v1_specific_wrong.json": "wrong_tiny.jsonl",
    "locomo_audit_errors.json": "errata_tiny.json",
}


@dataclass
class Block:
    path: str  # relative to the repository
    line: int  # of the opening fence
    lang: str
    text: str
    marks: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def read_blocks(path: Path = README) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            marks, j = [], i - 1
            while j >= 0 and (m := MARK.match(lines[j].strip())):
                marks.insert(0, m.group(1))
                j -= 1
            end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
            out.append(Block(path.relative_to(ROOT).as_posix(), i + 1, lines[i][3:].strip(),
                             "\n".join(lines[i + 1:end]) + "\n", marks))
            i = end + 1
        else:
            i += 1
    return out


def shell_commands(text: str) -> list[str]:
    """The block's commands: continuations joined, comments dropped, `a && b` split."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        cmd: list[str] = []
        for w in words + ["&&"]:
            if w == "&&":
                if cmd:
                    out.append(shlex.join(cmd))
                cmd = []
            else:
                cmd.append(w)
    return out


@dataclass
class Plan:
    skip_block: str | None = None
    skip_commands: dict[int, str] = field(default_factory=dict)  # 1-based
    file: str | None = None
    after: list[str] = field(default_factory=list)
    fake_server: bool = False
    extending_table: bool = False


def plan_of(block: Block) -> Plan:
    plan = Plan()
    for mark in block.marks:
        if m := SKIP.match(mark):
            if m.group(1):
                for n in m.group(1).replace(" ", "").split(","):
                    plan.skip_commands[int(n)] = m.group(2)
            else:
                plan.skip_block = m.group(2)
        elif mark.startswith("file "):
            plan.file = mark[5:].strip()
        elif mark.startswith("run "):
            plan.after.append(mark[4:].strip())
        elif mark == "fake-server":
            plan.fake_server = True
        elif mark == "extending-table":
            plan.extending_table = True
        else:
            raise AssertionError(f"{block.id}: unknown readme-test mark '{mark}'")
    return plan


BLOCKS = [b for page in PAGES for b in read_blocks(page)]


def test_every_block_is_run_or_skipped_with_a_reason():
    for b in BLOCKS:
        plan = plan_of(b)
        if plan.skip_block or plan.file:
            continue
        assert b.lang in ("bash", "python"), (
            f"{b.id}: a '{b.lang or 'plain'}' block with no readme-test mark: mark it "
            "<!-- readme-test: skip (REASON) --> or <!-- readme-test: file PATH -->")
        if b.lang == "bash":
            n = len(shell_commands(b.text))
            assert all(1 <= k <= n for k in plan.skip_commands), f"{b.id}: skips a command it does not have"


def extending_rows(text: str) -> list[tuple[str, str]]:
    """(extension, its "use it" cell) for each row of the README's "Extending chateval" table."""
    section = text[text.index("## Extending chateval"):]
    section = section[:section.index("\n## ", 1)]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith(("| extension", "|---"))]
    return [(cells[1].strip(), cells[3].strip().strip("`")) for cells in (r.split("|") for r in rows)]


def test_each_row_of_the_extending_table_is_run_as_written():
    """Every extension in the table is run, as a whole command, by the block marked for it."""
    [block] = [b for b in BLOCKS if b.path == "README.md" and plan_of(b).extending_table]
    plan = plan_of(block)
    assert not plan.skip_block and not plan.skip_commands and plan.fake_server
    commands = shell_commands(block.text)
    rows = extending_rows(README.read_text(encoding="utf-8"))
    assert len(rows) == 8 and len(commands) == len(rows)
    for (name, use), cmd in zip(rows, commands):
        assert use in cmd, f"the {name} row's '{use}' is not what the block runs: {cmd}"
        words = shlex.split(cmd)
        required = {"evaluate": ["--out"], "bench": ["--data", "--out"], "audit": ["--out"]}
        verb = words[words.index("chateval") + 1]
        assert all(flag in words for flag in required[verb]), f"the {name} row's command misses an option: {cmd}"


def run_or_skip(block: Block) -> str:
    """'run' when the block (or some command of it) is executed, else 'skip'."""
    plan = plan_of(block)
    if plan.skip_block:
        return "skip"
    if block.lang == "bash" and not plan.file:
        n = len(shell_commands(block.text))
        return "run" if any(k not in plan.skip_commands for k in range(1, n + 1)) else "skip"
    return "run"


# Before the manual moved from the README into docs/ (issue 29) 16 of the README's 32 blocks ran
# (20 passed tests with the other checks here; 16 skipped). Moving a block must never turn it off,
# and the new README examples, docs/extending.md and the older docs pages add more; issue 39 added the
# extending table's block, the provider block and the quickstart: 42; docs/rejudge.md's dry runs and
# Python example, by data set name on fixtures in the data folder (no ../shared): 44 now.
MIN_RUN = 44


def test_the_executed_blocks_do_not_drop():
    kinds = [run_or_skip(b) for b in BLOCKS]
    per_page = {p.relative_to(ROOT).as_posix(): sum(b.path == p.relative_to(ROOT).as_posix() for b in BLOCKS) for p in PAGES}
    print(f"code blocks: {len(BLOCKS)} in {len(PAGES)} pages, {kinds.count('run')} run, {kinds.count('skip')} skipped "
          f"with their reason; per page: {per_page}")
    assert kinds.count("run") >= MIN_RUN, f"{kinds.count('run')} blocks run, fewer than {MIN_RUN}: a block was turned off"


# --- the scratch folder ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("readme")
    work = base / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    # No data file in the working folder under a catalog's name: a user has them in the data
    # folder after `data get` (LoCoMo below; LongMemEval from the mirror), so a command naming a
    # file `data get` does not write (`longmemeval_s.json`) fails here as it would for them.
    (base / "cache" / "chateval" / "data" / "locomo").mkdir(parents=True)
    shutil.copy(FIXTURES / "locomo_tiny.json", base / "cache" / "chateval" / "data" / "locomo" / "locomo10.json")
    (base / "cache" / "chateval" / "data" / "faireval").mkdir()  # `calibrate faireval`, `audit faireval`
    shutil.copy(FIXTURES / "faireval_tiny.jsonl",
                base / "cache" / "chateval" / "data" / "faireval" / "faireval_gpt35_vs_vicuna13b.jsonl")
    # docs/rejudge.md's data sets by name (`locomo-audit-fc/fc_gpt-4o-mini_cot`, `--errata locomo-audit`):
    # small fixtures of ours under the catalog's file names (pinned checksums: not through `data get`).
    judged = base / "cache" / "chateval" / "data" / "locomo_judged"
    judged.mkdir()
    for name, fixture in JUDGED.items():
        shutil.copy(FIXTURES / "rejudge" / fixture, judged / name)
    import json

    lme = json.loads((FIXTURES / "lme_tiny.json").read_text())
    (work / "my_answers.jsonl").write_text("".join(
        json.dumps({"question_id": q["question_id"], "hypothesis": str(q["answer"])}) + "\n" for q in lme))
    loco = json.loads((FIXTURES / "locomo_tiny.json").read_text())
    (work / "preds.jsonl").write_text("".join(
        json.dumps({"sample_id": c["sample_id"], "question": qa["question"], "prediction": str(qa.get("answer", ""))})
        + "\n" for c in loco for qa in c["qa"]))
    # The inputs the judge-on-your-data blocks name: labelled pairs, and unlabelled ones.
    shutil.copy(FIXTURES / "calibrate_pairwise.jsonl", work / "labels.jsonl")
    pairs = (ROOT / "examples" / "faireval_pairwise.jsonl").read_text().split("\n")[:2]
    for name in ("new.jsonl", "items.jsonl"):
        (work / name).write_text("\n".join(pairs) + "\n")
    shared = _shared_data()
    if shared.is_dir():
        (base / "shared").mkdir()
        (base / "shared" / "data").symlink_to(shared)
    # A local mirror of the LongMemEval files (unpinned in the catalog, so a fixture is accepted):
    # the README's memory ask question id is the oracle file's first question here.
    (base / "mirror" / "longmemeval").mkdir(parents=True)
    (base / "mirror" / "longmemeval" / "longmemeval_s_cleaned.json").write_text(json.dumps(lme))
    oracle = [dict(lme[0], question_id="6613b389"), *lme[1:]]
    (base / "mirror" / "longmemeval" / "longmemeval_oracle.json").write_text(json.dumps(oracle))
    hf = os.environ.get("HF_HOME") or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface")
    with FileServer(base / "mirror") as mirror:
        DATA_ENV.update(XDG_CACHE_HOME=str(base / "cache"), CHATEVAL_DATA_MIRROR=mirror.base_url, HF_HOME=hf)
        _run(_chateval_argv(["data", "get", "longmemeval-oracle", "longmemeval-s"]), work)
        assert (base / "cache" / "chateval" / "data" / "longmemeval" / "longmemeval_s_cleaned.json").is_file()
        yield work
    DATA_ENV.clear()


@pytest.fixture(scope="module")
def endpoint():
    """The fake OpenAI-compatible server that `fake-server` blocks' `openai/...` models call."""
    # JSON of the schema a request asks for (typed memory steps, structured verdicts), else text.
    # Prose with score lines when no schema is asked for: the ChatEval meta-benchmarks parse free text.
    with FakeOpenAIServer(responder=schema_responder(DEFAULT_REPLY)) as server:
        yield server


def _env(work: Path, endpoint: FakeOpenAIServer | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)  # this checkout's chateval; not the scratch folder
    env.pop("OPENAI_API_KEY", None)
    env.pop("CHATEVAL_DATA_DIR", None)  # the default data folder, as a new user has it (never the shared one)
    env |= DATA_ENV
    env["BROWSER"] = "true"  # never open a browser
    if endpoint is not None:  # never a real endpoint: the fake server on 127.0.0.1
        env |= {"OPENAI_API_KEY": "sk-readme-test", "OPENAI_BASE_URL": endpoint.base_url}
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chateval_argv(args: list[str]) -> list[str]:
    args = list(args)
    if args[:1] in (["evaluate"], ["bench"]) and "--limit" not in args and "--list" not in args:
        args += ["--limit", "1"]
    memory = (args[:1] == ["bench"] and len(args) > 1 and args[1] in MEMORY_BENCHES) or args[:2] == ["memory", "ask"]
    if memory and "--embedder" not in args:
        args += ["--embedder", "hash"]
    if args[:1] in (["evaluate"], ["bench"], ["audit"], ["rejudge"]) and "--out" in args and "--overwrite" not in args \
            and "--resume" not in args:
        args += ["--overwrite"]  # a block may run twice in one session (reruns of a failed test), and
        # blocks of two pages may write one folder (runs/audit)
    return [sys.executable, "-P", "-m", "chateval.cli", *args]


def _run(argv: list[str], work: Path, endpoint: FakeOpenAIServer | None = None,
         extra_env: dict[str, str] | None = None) -> None:
    env = _env(work, endpoint) | (extra_env or {})
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"{shlex.join(argv[3:] if argv[1] == '-P' else argv)}: exit {proc.returncode}\n" \
                                 f"{proc.stderr[-3000:]}"


def _wait_for(port: int, proc: subprocess.Popen) -> None:
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the agent exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def run_shell_block(block: Block, plan: Plan, work: Path,
                    endpoint: FakeOpenAIServer | None = None) -> tuple[int, list[str]]:
    """Run the block's commands; returns how many ran and the ones skipped (with why)."""
    text = block.text
    servers: list[subprocess.Popen] = []
    skipped, ran = [], 0
    if "examples/http_agent.py" in text:
        port = str(_free_port())
        text = re.sub(r"\b8080\b", port, text)
    try:
        for n, cmd in enumerate(shell_commands(text), 1):
            if n in plan.skip_commands:
                skipped.append(f"{cmd}  ({plan.skip_commands[n]})")
                continue
            args = shlex.split(cmd)
            # `VAR=VALUE chateval ...`: the variables for that command; in a fake-server block a
            # provider's endpoint and key variables name the fake server and a test key.
            extra_env: dict[str, str] = {}
            while args and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", args[0]):
                name, _, value = args.pop(0).partition("=")
                if endpoint is not None and name.endswith("_BASE_URL"):
                    value = endpoint.base_url
                elif endpoint is not None and name.endswith("_API_KEY"):
                    value = "sk-readme-test"
                extra_env[name] = value
            # A benchmark without --data reads its default data set under ../shared/data.
            reads_shared = "../shared/data" in cmd or (
                args[:2] == ["chateval", "bench"] and not {"--data", "--list", "--help"} & set(args)
            )
            if reads_shared and not (work.parent / "shared" / "data").exists():
                skipped.append(f"{cmd}  (../shared/data is absent)")
                continue
            ran += 1
            if args[0] == "chateval":
                _run(_chateval_argv(args[1:]), work, endpoint, extra_env)
            elif args[:2] == ["python", "examples/http_agent.py"]:
                proc = subprocess.Popen([sys.executable, *args[1:]], cwd=work, env=_env(work),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                servers.append(proc)
                _wait_for(int(args[args.index("--port") + 1]), proc)
            else:
                raise AssertionError(f"{block.id}: no rule to run '{cmd}': mark it skipped with a reason")
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=10)
    return ran, skipped


def run_python(code: str, path: Path, work: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    _run([sys.executable, str(path.relative_to(work))], work)


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_readme_block(block: Block, work: Path, endpoint: FakeOpenAIServer):
    plan = plan_of(block)
    if plan.skip_block:
        pytest.skip(f"{block.id}: {plan.skip_block}")
    if plan.file:
        target = work / plan.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text)
        if block.lang == "python":
            _run([sys.executable, "-c", f"import runpy; runpy.run_path({plan.file!r})"], work)
        for cmd in plan.after:
            if "../shared/data" in block.text + cmd and not (work.parent / "shared" / "data").exists():
                pytest.skip(f"{block.id}: reads ../shared/data, which is absent")
            _run(_chateval_argv(shlex.split(cmd)[1:]), work)
        return
    if block.lang == "python":
        run_python(block.text, work / f"snippet_{block.line}.py", work)
        return
    served = len(endpoint.requests)
    ran, skipped = run_shell_block(block, plan, work, endpoint if plan.fake_server else None)
    if not ran:
        pytest.skip(f"{block.id}: " + "; ".join(skipped))
    if plan.fake_server:  # the block's model calls really went to the fake server
        assert len(endpoint.requests) > served, f"{block.id}: no request reached the fake server"
    if skipped:
        # Part of the block ran; the rest is listed with its reason (pytest -rA shows it).
        print(f"{block.id}: not run: " + "; ".join(skipped))


# --- what the README promises about own agents -----------------------------------------------
@pytest.mark.slow
def test_the_readme_agent_runs_by_import_path_from_its_folder(work: Path):
    """The README's own agent, saved as mypkg/agents.py, runs from its folder by import path
    under the console script's rules (no working directory on the path), and judges its units."""
    agent = next(b for b in BLOCKS if plan_of(b).file == "mypkg/agents.py")
    (work / "mypkg").mkdir(exist_ok=True)
    (work / "mypkg" / "agents.py").write_text(agent.text)
    out = work / "runs" / "import-path"
    _run(_chateval_argv(["bench", "locomo", "--systems", "mypkg.agents:MyMemory", "--data", "locomo10.json",
                         "--out", str(out)]), work)
    [unit] = read_jsonl(out / "samples.jsonl")
    assert unit.get("error") is None and unit["qa"], unit


@pytest.mark.slow
def test_an_unknown_setting_of_the_readme_agent_is_refused(work: Path):
    agent = next(b for b in BLOCKS if plan_of(b).file == "mypkg/agents.py")
    (work / "mypkg").mkdir(exist_ok=True)
    (work / "mypkg" / "agents.py").write_text(agent.text)
    proc = subprocess.run(_chateval_argv(["bench", "locomo", "--systems", "mypkg.agents:MyMemory", "--set",
                                          "my_memory.kk=3", "--data", "locomo10.json", "--out", "runs/typo"]),
                          cwd=work, env=_env(work), capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 2
    assert "setting 'kk': unknown setting (known: k)" in " ".join(proc.stderr.split())


@pytest.mark.slow
def test_an_import_path_that_cannot_be_found_says_how(tmp_path):
    env = _env(tmp_path)
    proc = subprocess.run(_chateval_argv(["bench", "locomo", "--systems", "nopkg.agents:MyMemory", "--data",
                                          str(FIXTURES / "locomo_tiny.json"), "--out", "runs/x"]),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 2
    assert "run from the folder that holds nopkg/, or add it to PYTHONPATH" in " ".join(proc.stderr.split())
