"""The viewer in headless Chromium (Debian's chromium + chromium-driver, driven by selenium with the
system chromedriver; nothing is downloaded): filters, debate order, escaping, side by side."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chateval.view import build_view

from .conftest import read_jsonl
from .view_fixtures import SCRIPT, evaluate_run, faireval_run, longmemeval_run

CHROMEDRIVER = Path(shutil.which("chromedriver") or "/usr/bin/chromedriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[view]')")
if not CHROMEDRIVER.exists() or not CHROMIUM:
    pytest.skip("no Chromium here (apt-get install chromium chromium-driver)", allow_module_level=True)

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

pytestmark = pytest.mark.slow  # a headless browser: seconds per test


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1400"):
        opts.add_argument(arg)
    # The Service path is given so Selenium Manager never tries to download a driver.
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="module")
def ev(tmp):
    return evaluate_run(tmp)


def visible(driver, selector: str = ".sample") -> list[str]:
    return [r.get_attribute("data-key") for r in driver.find_elements(By.CSS_SELECTOR, selector) if r.is_displayed()]


def show_all(driver) -> None:
    """From the list/detail layout (one question at a time) to every question on one page."""
    button = driver.find_element(By.ID, "layout")
    assert button.text == "show all samples"
    button.click()


def test_filters_change_the_visible_samples(browser, ev):
    recs = read_jsonl(ev / "samples.jsonl")
    browser.get(build_view([ev]).as_uri())
    show_all(browser)
    assert visible(browser) == [r["id"] for r in recs]
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    want = [r["id"] for r in recs if r["label"] != r["verdict"]["winner"]]
    assert 0 < len(want) < len(recs)  # the fixture has both kinds, so the filter has something to do
    assert visible(browser) == want == visible(browser, ".row")
    assert browser.find_element(By.ID, "count").text == f"{len(want)} of {len(recs)} samples"
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    box = browser.find_element(By.ID, "search")
    box.send_keys(recs[1]["inputs"]["question"][:25])
    assert visible(browser) == [recs[1]["id"]]


def test_list_detail_shows_the_picked_question(browser, ev):
    recs = read_jsonl(ev / "samples.jsonl")
    browser.get(build_view([ev]).as_uri())
    items = browser.find_elements(By.CSS_SELECTOR, "#list .item")
    assert [i.text.splitlines()[0] for i in items] == [r["id"] for r in recs]
    assert visible(browser) == [recs[0]["id"]]  # one question at a time: the first
    list_box, detail = browser.find_element(By.ID, "list"), browser.find_element(By.CSS_SELECTOR, ".row.current")
    assert list_box.location["x"] < detail.location["x"]  # the list on the left, the detail on the right
    items[2].click()
    assert visible(browser) == [recs[2]["id"]] and "current" in items[2].get_attribute("class")
    # A filter hides the list's entries too; the picked question filtered out, the first one left is shown.
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    want = [r["id"] for r in recs if r["label"] != r["verdict"]["winner"]]
    assert [i.text.splitlines()[0] for i in items if i.is_displayed()] == want
    assert visible(browser) == ([recs[2]["id"]] if recs[2]["id"] in want else [want[0]])
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    # A link to a sample picks its question.
    browser.get(build_view([ev]).as_uri() + "#" + browser.find_elements(By.CSS_SELECTOR, ".sample")[3].get_attribute("id"))
    assert visible(browser) == [recs[3]["id"]]


def test_debate_turns_render_in_order_and_script_stays_text(browser, ev):
    rec = read_jsonl(ev / "samples.jsonl")[0]
    browser.get(build_view([ev]).as_uri())
    assert browser.title.startswith("chateval view")  # the candidate's script did not run
    assert not browser.find_elements(By.CSS_SELECTOR, "main script")  # nor became an element
    row = browser.find_element(By.CSS_SELECTOR, f'.row[data-key="{rec["id"]}"]')
    assert SCRIPT in row.find_element(By.CSS_SELECTOR, "pre.input-answer_2").text
    for order in ("original", "swapped"):  # the swapped order's debate is shown beside the original
        box = row.find_element(By.CSS_SELECTOR, f'.order[data-order="{order}"]')
        shown = [(t.get_attribute("data-speaker"), t.get_attribute("data-round"), t.find_element(By.CSS_SELECTOR, ".text").text)
                 for t in box.find_elements(By.CSS_SELECTOR, ".turn")]
        assert shown == [(t["speaker"], str(t["round"]), t["text"].strip()) for t in rec["transcript"] if t["order"] == order]
    summary = row.find_element(By.CSS_SELECTOR, ".turn.summary")
    assert "summarizer" in summary.text
    original, swapped = (row.find_element(By.CSS_SELECTOR, f'.order[data-order="{o}"]') for o in ("original", "swapped"))
    assert original.location["y"] == swapped.location["y"] and original.location["x"] < swapped.location["x"]


def test_category_filter_on_a_faireval_run(browser, tmp):
    run = faireval_run(tmp)
    browser.get(build_view([run]).as_uri())
    show_all(browser)
    total = len(visible(browser))
    Select(browser.find_element(By.CSS_SELECTOR, '[data-facet="category"]')).select_by_visible_text("coding")
    shown = [s for s in browser.find_elements(By.CSS_SELECTOR, ".sample") if s.is_displayed()]
    assert 0 < len(shown) < total and all(s.get_attribute("data-category") == "coding" for s in shown)


def test_system_filter_and_gold_evidence_on_a_longmemeval_run(browser, tmp):
    run = longmemeval_run(tmp)
    browser.get(build_view([run]).as_uri())
    show_all(browser)
    assert len(visible(browser)) == 4 and len(visible(browser, ".row")) == 2
    Select(browser.find_element(By.CSS_SELECTOR, '[data-facet="system"]')).select_by_visible_text("retrieval")
    keys = visible(browser)
    assert len(keys) == 2 and all(k.endswith("::retrieval") for k in keys)
    gold = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".sample .rank.gold") if e.is_displayed()]
    assert any("answer_q-city" in g for g in gold)


def test_two_runs_side_by_side(browser, ev, tmp):
    other = evaluate_run(tmp, "ev_one", "--agents", "1", "--strategy", "one_by_one")
    browser.get(build_view([ev, other], out=tmp / "cmp.html").as_uri())
    row = browser.find_elements(By.CSS_SELECTOR, ".row")[0]
    left, right = row.find_elements(By.CSS_SELECTOR, ".cell")
    assert left.location["y"] == right.location["y"] and left.location["x"] < right.location["x"]
    assert "ev_one" in right.text
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture
def served(tmp):
    """A folder with two evaluate runs and a benchmark run, served live (polling every 200 ms)."""
    import shutil
    import threading

    from chateval.view.server import ViewServer

    root, src = tmp / "served", tmp / "served_src"
    if not root.exists():
        src.mkdir()
        shutil.copytree(evaluate_run(src), root / "ev")
        shutil.copytree(evaluate_run(src, "ev_one", "--agents", "1", "--strategy", "one_by_one"), root / "ev_one")
        shutil.copytree(faireval_run(src), root / "bench" / "fe")
    srv = ViewServer(root, 0, poll_ms=200)
    thread = srv.start()
    stop = threading.Timer(60, srv.shutdown)  # bounded even if the test hangs
    stop.start()
    yield srv, root
    stop.cancel()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def test_run_list_compare_and_live_refresh(browser, served, tmp):
    from selenium.webdriver.support.ui import WebDriverWait

    srv, root = served
    browser.get(srv.url)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.run")
    assert sorted(r.get_attribute("data-rel") for r in rows) == ["bench/fe", "ev", "ev_one"]
    assert all(r.find_element(By.CSS_SELECTOR, ".status").text == "complete" for r in rows)
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    browser.save_screenshot(str(tmp / "runs.png"))
    assert (tmp / "runs.png").read_bytes()[:4] == b"\x89PNG"
    button = browser.find_element(By.ID, "compare")
    assert not button.is_enabled()
    for rel in ("ev", "ev_one"):
        browser.find_element(By.CSS_SELECTOR, f'tr.run[data-rel="{rel}"] .pick').click()
    assert button.is_enabled()
    button.click()
    WebDriverWait(browser, 10).until(lambda d: "/compare?" in d.current_url)
    diff = browser.find_element(By.CSS_SELECTOR, "table.settings-diff")
    assert "strategy" in diff.text and "one_by_one" in diff.text
    # A run page follows its run: a record appended is on the page after the next poll.
    browser.get(srv.url + "run/ev")
    n = len(browser.find_elements(By.CSS_SELECTOR, ".sample"))
    rec = read_jsonl(root / "ev" / "samples.jsonl")[0]
    with open(root / "ev" / "samples.jsonl", "a") as f:
        f.write(__import__("json").dumps(rec | {"id": "appended-while-open"}) + "\n")
    WebDriverWait(browser, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".sample")) == n + 1)
    assert browser.find_elements(By.CSS_SELECTOR, '.sample[data-key="appended-while-open"]')


def test_a_paged_page_loads_its_chunks_from_files_beside_it(browser, ev, tmp):
    """One question per chunk: the page holds the list and the first row; the others load from
    paged_data/ (file://, as scripts) when picked, linked to, or scrolled to."""
    from selenium.webdriver.support.ui import WebDriverWait

    recs = read_jsonl(ev / "samples.jsonl")
    page = build_view([ev], out=tmp / "paged.html", chunk_rows=1)
    assert len(list((tmp / "paged_data").iterdir())) == len(recs) - 1
    browser.get(page.as_uri())
    items = browser.find_elements(By.CSS_SELECTOR, "#list .item")
    assert [i.text.splitlines()[0] for i in items] == [r["id"] for r in recs]
    assert visible(browser) == [recs[0]["id"]] and len(browser.find_elements(By.CSS_SELECTOR, ".row")) == 1
    items[2].click()  # a later chunk: loaded, then shown
    WebDriverWait(browser, 10).until(lambda d: visible(d) == [recs[2]["id"]])
    assert len(browser.find_elements(By.CSS_SELECTOR, ".row")) == 2  # chunk 1 was never asked for
    # The candidate's <script> (in chunk 0) and every loaded chunk's text stay text.
    assert browser.title.startswith("chateval view") and not browser.find_elements(By.CSS_SELECTOR, "main script")
    # The filters work from the list, before the rows they hide are loaded.
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    want = [r["id"] for r in recs if r["label"] != r["verdict"]["winner"]]
    assert [i.text.splitlines()[0] for i in items if i.is_displayed()] == want
    assert browser.find_element(By.ID, "count").text == f"{len(want)} of {len(recs)} samples"
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    # Search matches questions not loaded yet (the list's search text holds the start of each input).
    box = browser.find_element(By.ID, "search")
    box.send_keys(recs[3]["inputs"]["question"][:25])
    assert [i.text.splitlines()[0] for i in items if i.is_displayed()] == [recs[3]["id"]]
    WebDriverWait(browser, 10).until(lambda d: visible(d) == [recs[3]["id"]])
    box.clear()
    box.send_keys(" ")
    box.clear()
    # A link to a sample in a chunk not loaded yet picks its question.
    from chateval.view.samples import anchor

    browser.get(page.as_uri() + "#" + anchor(recs[1]["id"]))
    WebDriverWait(browser, 10).until(lambda d: visible(d) == [recs[1]["id"]])
    # Every question on one page: the chunks load as they scroll into view, in order.
    browser.get(page.as_uri())
    show_all(browser)
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    WebDriverWait(browser, 10).until(lambda d: visible(d) == [r["id"] for r in recs])
    # A page moved without its folder says so where the rows would be.
    moved = tmp / "moved"
    moved.mkdir(exist_ok=True)
    shutil.copy(page, moved / "paged.html")
    browser.get((moved / "paged.html").as_uri())
    browser.find_elements(By.CSS_SELECTOR, "#list .item")[1].click()
    WebDriverWait(browser, 10).until(lambda d: "folder of chunks is missing" in d.find_element(By.CSS_SELECTOR, "main").text)


def test_a_served_page_loads_its_chunks_from_the_server(browser, tmp):
    import threading

    from selenium.webdriver.support.ui import WebDriverWait

    from chateval.view.server import ViewServer

    root = tmp / "served_paged"
    if not root.exists():
        src = tmp / "served_paged_src"
        src.mkdir()
        shutil.copytree(evaluate_run(src), root / "ev")
    recs = read_jsonl(root / "ev" / "samples.jsonl")
    srv = ViewServer(root, 0, poll_ms=200, chunk_rows=1)
    thread = srv.start()
    stop = threading.Timer(60, srv.shutdown)
    stop.start()
    try:
        browser.get(srv.url + "run/ev")
        assert len(browser.find_elements(By.CSS_SELECTOR, ".row")) == 1
        browser.find_elements(By.CSS_SELECTOR, "#list .item")[3].click()
        WebDriverWait(browser, 10).until(lambda d: visible(d) == [recs[3]["id"]])
        show_all(browser)
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        WebDriverWait(browser, 10).until(lambda d: visible(d) == [r["id"] for r in recs])
    finally:
        stop.cancel()
        srv.shutdown()
        srv.server_close()
        thread.join(5)
