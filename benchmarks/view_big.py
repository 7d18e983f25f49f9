"""``chateval view`` on a 10,000-record run: the paged page against the old single page.

A run of ``--records`` copies of one offline evaluate record (new ids; as benchmarks/read_run.py
builds it) is viewed by this checkout's code and by the anchor's (``--anchor-ref``, default the
last commit with the single page, checked out into a temporary git worktree; or ``--anchor-repo``),
alternating, ``--repeats`` times each, in this one run:

* write: ``chateval view RUN --out PAGE`` as a fresh process (wall seconds);
* first list: headless Chromium opens the page from ``file://`` until the list holds every
  question and the first question's row is shown, two animation frames later (rendered);
* later record: a click on a question in the last chunk (~95% down the list) until its row is
  shown and rendered (the paged page loads that chunk's file; the single page has it already).

Medians and their ratios (paged / single page):

    python benchmarks/view_big.py [--records 10000] [--repeats 3] [--anchor-ref 4b2e586]
        [--out benchmarks/results/view_big.json]

Needs selenium, Debian's chromium and chromium-driver (as tests/test_view_browser.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from read_run import make_run  # noqa: E402

ANCHOR_REF = "4b2e586"  # main before the paged viewer (issue 38 item 5): one page holds every record
CLI = "import sys; from chateval.cli import main; sys.exit(main())"
RENDERED = """
const [want, key, done] = arguments;
function ready(){
  const items = document.querySelectorAll('#list .item').length;
  const row = key === null ? document.querySelector('main .row.current')
                           : document.querySelector('main .row.current[data-key="' + key + '"]');
  return items === want && row !== null && row.getBoundingClientRect().height > 0;
}
(function wait(){
  if (ready()) requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
  else setTimeout(wait, 5);
})();
"""


def write(repo: Path, run: Path, page: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(repo), CHATEVAL_CACHE_DIR=str(page.parent / "cache"))
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", CLI, "view", str(run), "--out", str(page)],
        env=env,
        cwd=page.parent,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1400",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)
    driver.set_page_load_timeout(900)
    driver.set_script_timeout(900)
    return driver


def open_times(driver, page: Path, n: int, later: str) -> tuple[float, float]:
    """Seconds to the first rendered list, then to a later question's row rendered after its click."""
    from selenium.webdriver.common.by import By

    driver.get("about:blank")
    t0 = time.perf_counter()
    driver.get(page.as_uri())
    driver.execute_async_script(RENDERED, n, None)
    first = time.perf_counter() - t0
    item = driver.find_elements(By.CSS_SELECTOR, "#list .item")[int(0.95 * n)]
    t0 = time.perf_counter()
    item.click()
    driver.execute_async_script(RENDERED, n, later)
    return first, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--anchor-ref", default=ANCHOR_REF, help="git ref of the single-page viewer (default %(default)s)")
    ap.add_argument("--anchor-repo", help="a checkout of the anchor's code instead of a worktree of --anchor-ref")
    ap.add_argument("--seed-run", help="copy this run's first record (default: a fresh offline evaluate run's)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/view_big.json"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="chateval-view-big-") as tmp_name:
        tmp = Path(tmp_name)
        anchor = Path(args.anchor_repo) if args.anchor_repo else tmp / "anchor"
        if not args.anchor_repo:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "--detach", str(anchor), args.anchor_ref],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        try:
            result = measure(args, tmp, anchor)
        finally:
            if not args.anchor_repo:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(anchor)], check=False)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def measure(args: argparse.Namespace, tmp: Path, anchor: Path) -> dict:
    run = make_run(tmp, args.records, args.seed_run)
    later = f"copy-{int(0.95 * args.records)}"
    codes = {"single page (anchor)": anchor, "paged": REPO}
    pages = {name: tmp / f"out-{i}" / "view.html" for i, name in enumerate(codes)}
    for p in pages.values():
        p.parent.mkdir()
    times: dict[str, dict[str, list[float]]] = {n: {"write": [], "first list": [], "later record": []} for n in codes}
    driver = browser()
    try:
        for _ in range(args.repeats):
            for name, repo in codes.items():
                times[name]["write"].append(write(repo, run, pages[name]))
                first, click = open_times(driver, pages[name], args.records, later)
                times[name]["first list"].append(first)
                times[name]["later record"].append(click)
                print(
                    f"  {name:22s} write {times[name]['write'][-1]:7.2f} s  first list {first:7.2f} s  "
                    f"later record {click:6.3f} s",
                    flush=True,
                )
    finally:
        driver.quit()
    med = {n: {k: statistics.median(v) for k, v in t.items()} for n, t in times.items()}
    old, new = med["single page (anchor)"], med["paged"]
    sizes = {
        n: {
            "page_bytes": p.stat().st_size,
            "chunk_files": len(list((p.parent / "view_data").glob("*.js"))) if (p.parent / "view_data").is_dir() else 0,
            "chunk_bytes": sum(f.stat().st_size for f in (p.parent / "view_data").glob("*.js"))
            if (p.parent / "view_data").is_dir()
            else 0,
        }
        for n, p in pages.items()
    }
    result = {
        "records": args.records,
        "samples_bytes": (run / "samples.jsonl").stat().st_size,
        "repeats": args.repeats,
        "anchor": args.anchor_repo or f"git worktree of {args.anchor_ref}",
        "median_s": med,
        "ratio_paged_to_single_page": {k: new[k] / old[k] for k in new},
        "sizes": sizes,
        "times_s": times,
        "python": platform.python_version(),
        "machine": f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end",
        "command": "python benchmarks/view_big.py " + " ".join(sys.argv[1:]),
    }
    print(f"{args.records} records, median of {args.repeats}:")
    for k in new:
        print(f"  {k:14s} single page {old[k]:8.3f} s   paged {new[k]:8.3f} s   ratio {new[k] / old[k]:6.3f}")
    for n, s in sizes.items():
        print(
            f"  {n:22s} page {s['page_bytes'] / 1e6:6.1f} MB + {s['chunk_files']} chunks {s['chunk_bytes'] / 1e6:.1f} MB"
        )
    return result


if __name__ == "__main__":
    raise SystemExit(main())
