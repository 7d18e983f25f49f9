"""Peak memory of ``chateval view`` on a big run (issue 38 item 3): the page of an N-record evaluate
run (one offline record copied with new ids, as ``read_run.py`` makes it) written by two chateval
trees in turn, each a fresh process; its peak RSS is the kernel's ``ru_maxrss`` for that child
(``os.wait4``), with its wall and CPU seconds. The two pages and their chunks are then compared
byte for byte. Run:

    python benchmarks/view_memory.py --before TREE [--repo TREE] [--records 10000] [--json FILE]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from read_run import make_run  # noqa: E402

CLI = "import sys; from chateval.cli import main; sys.exit(main())"


def view(repo: Path, run: Path, out: Path) -> dict[str, float]:
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(repo), CHATEVAL_CACHE_DIR=str(out / "cache"))
    t0 = time.perf_counter()
    argv = [sys.executable, "-c", CLI, "view", str(run), "--out", str(out / "view.html")]
    # cwd: the run's folder, not a checkout (``python -c`` imports from the current directory first).
    proc = subprocess.Popen(argv, env=env, cwd=out, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed")
    return {
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the chateval tree before a change")
    ap.add_argument("--repo", type=Path, default=REPO, help="the chateval tree after it (default: this checkout)")
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        run = make_run(tmp, args.records, None)
        rows = {code: view(tree, run, tmp / code) for code, tree in (("before", args.before), ("after", args.repo))}
        a, b = tmp / "before", tmp / "after"
        chunks = sorted(p.name for p in (a / "view_data").glob("*.js")) if (a / "view_data").is_dir() else []
        same = filecmp.cmp(a / "view.html", b / "view.html", shallow=False) and all(
            filecmp.cmp(a / "view_data" / c, b / "view_data" / c, shallow=False) for c in chunks
        )
        same = same and chunks == sorted(p.name for p in (b / "view_data").glob("*.js"))
    result = {"records": args.records, "runs": rows, "pages_identical": same, "chunks": len(chunks),
              "load_at_end": list(os.getloadavg())}  # fmt: skip
    for code, r in rows.items():
        print(f"{code:>6}: peak RSS {r['peak_rss_mib']} MiB, {r['wall_s']} s wall, {r['cpu_s']} s CPU")
    print(f"page and {len(chunks)} chunks byte-for-byte the same: {same}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
