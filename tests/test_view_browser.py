"""The viewer in headless Chromium (Debian's chromium + chromium-driver, driven by selenium with the
system chromedriver; nothing is downloaded): filters, debate order, escaping."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chateval.view import build_view

from .conftest import read_jsonl
from .view_fixtures import SCRIPT, evaluate_run, faireval_run

CHROMEDRIVER = Path("/usr/bin/chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e .[view-test])")
if not CHROMEDRIVER.exists() or not (shutil.which("chromium") or shutil.which("chromium-browser")):
    pytest.skip("no Chromium here (apt-get install chromium chromium-driver)", allow_module_level=True)

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1400"):
        opts.add_argument(arg)
    # The Service path is given so Selenium Manager never tries to download a driver.
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    return evaluate_run(tmp_path_factory.mktemp("browser"))


def visible_keys(driver) -> list[str]:
    return [r.get_attribute("data-key") for r in driver.find_elements(By.CSS_SELECTOR, ".row") if r.is_displayed()]


def test_filters_change_the_visible_samples(browser, ev):
    recs = read_jsonl(ev / "samples.jsonl")
    browser.get(build_view([ev]).as_uri())
    assert visible_keys(browser) == [r["id"] for r in recs]
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    want = [r["id"] for r in recs if r["label"] != r["verdict"]["winner"]]
    assert 0 < len(want) < len(recs)  # the fixture has both kinds, so the filter has something to do
    assert visible_keys(browser) == want
    assert browser.find_element(By.ID, "count").text == f"{len(want)} of {len(recs)} samples"
    browser.find_element(By.CSS_SELECTOR, '[data-flag="disagrees"]').click()
    box = browser.find_element(By.ID, "search")
    box.send_keys(recs[1]["inputs"]["question"][:25])
    assert visible_keys(browser) == [recs[1]["id"]]


def test_debate_turns_render_in_order_and_script_stays_text(browser, ev):
    rec = read_jsonl(ev / "samples.jsonl")[0]
    browser.get(build_view([ev]).as_uri())
    assert browser.title.startswith("chateval view")  # the candidate's script did not run
    row = browser.find_element(By.CSS_SELECTOR, f'.row[data-key="{rec["id"]}"]')
    assert SCRIPT in row.find_element(By.CSS_SELECTOR, "pre.input-answer_2").text
    original = row.find_element(By.CSS_SELECTOR, '.order[data-order="original"]')
    shown = [(t.get_attribute("data-speaker"), t.find_element(By.CSS_SELECTOR, ".text").text)
             for t in original.find_elements(By.CSS_SELECTOR, ".turn")]
    assert shown == [(t["speaker"], t["text"].strip()) for t in rec["transcript"] if t["order"] == "original"]
    assert row.find_elements(By.CSS_SELECTOR, '.order[data-order="swapped"] .turn')


def test_category_filter_on_a_faireval_run(browser, tmp_path):
    run = faireval_run(tmp_path)
    browser.get(build_view([run]).as_uri())
    total = len(visible_keys(browser))
    from selenium.webdriver.support.ui import Select
    Select(browser.find_element(By.CSS_SELECTOR, '[data-facet="category"]')).select_by_visible_text("coding")
    rows = [r for r in browser.find_elements(By.CSS_SELECTOR, ".row") if r.is_displayed()]
    assert 0 < len(rows) < total and all(r.get_attribute("data-category") == "coding" for r in rows)
