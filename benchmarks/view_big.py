"""``chateval view`` on a 10,000-record run: the paged page against the old single page.

A run of ``--records`` copies of one offline evaluate record (new ids; as benchmarks/read_run.py
builds it) is viewed by this checkout's code and by the anchor's (``--anchor-ref``, default the
last commit with the single page, checked out into a temporary git worktree; or ``--anchor-repo``),
alternating, ``--repeats`` times each, in this one run:

* write: ``chateval view RUN --out PAGE`` as a fresh process (wall seconds, and its CPU seconds:
  the machine is shared, so walls swing);
* first list: headless Chromium opens the page from ``file://``; from the navigation's start
  until the list holds every question and the first question's row is shown, two animation
  frames later (painted), by the browser's clock;
* later record: a click (in the page) on a question in the last chunk (~95% down the list) until
  its row is shown and painted (the paged page loads that chunk's file; the single page has it).

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
import resource
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
# Run in the page: wait until the list holds every question and the wanted row (the current one,
# or the one whose question is clicked here) is shown, then two animation frames (it is painted);
# answer performance.now(): milliseconds since the navigation started, or since the click.
RENDERED = """
const [want, index, done] = arguments;
const item = index === null ? null : document.querySelectorAll('#list .item')[index];
function ready(){
  if (document.querySelectorAll('#list .item').length !== want) return false;
  const row = document.querySelector(item === null ? 'main .row.current' : '#' + item.dataset.row + '.current');
  return row !== null && row.getBoundingClientRect().height > 0;
}
const t0 = item === null ? 0 : performance.now();
if (item !== null) item.click();
(function wait(){
  if (ready()) requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
  else setTimeout(wait, 2);
})();
"""


def write(repo: Path, run: Path, page: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of ``chateval view RUN --out PAGE`` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(repo), CHATEVAL_CACHE_DIR=str(page.parent / "cache"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", CLI, "view", str(run), "--out", str(page)],
        env=env,
        cwd=page.parent,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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


def open_times(driver, page: Path, n: int) -> tuple[float, float]:
    """Seconds from navigation start to the first rendered list, then from a click (in the page) on
    a question ~95% down the list to its row rendered. Timed by the browser's clock, so WebDriver's
    own round trips are not counted."""
    driver.get("about:blank")
    driver.get(page.as_uri())
    first = driver.execute_async_script(RENDERED, n, None) / 1000
    return first, driver.execute_async_script(RENDERED, n, int(0.95 * n)) / 1000


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
    codes = {"single page (anchor)": anchor, "paged": REPO}
    pages = {name: tmp / f"out-{i}" / "view.html" for i, name in enumerate(codes)}
    for p in pages.values():
        p.parent.mkdir()
    times: dict[str, dict[str, list[float]]] = {
        n: {"write": [], "write CPU": [], "first list": [], "later record": []} for n in codes
    }
    driver = browser()
    try:
        for _ in range(args.repeats):
            for name, repo in codes.items():
                wall, cpu = write(repo, run, pages[name])
                times[name]["write"].append(wall)
                times[name]["write CPU"].append(cpu)
                first, click = open_times(driver, pages[name], args.records)
                times[name]["first list"].append(first)
                times[name]["later record"].append(click)
                print(
                    f"  {name:22s} write {wall:7.2f} s ({cpu:6.2f} s CPU)  first list {first:7.2f} s  "
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
