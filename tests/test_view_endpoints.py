"""`chateval view A B` compares where the models were called: two runs of one model against
different endpoints show the endpoint (redacted) among the settings that differ."""

from __future__ import annotations

import json
import re
import shutil

from chateval.view import build_view

from .view_fixtures import evaluate_run

SERVER_A = "http://alice7:pw-zq81@127.0.0.1:9/v1?key=key-zq82"
SERVER_B = "http://127.0.0.1:10/v1"


def diff_rows(text: str) -> dict[str, list[str]]:
    assert '<table class="hl settings-diff">' in text, "no settings differ"
    table = text[text.index('<table class="hl settings-diff">') :]
    table = table[: table.index("</table>")]
    return {m[0]: m[1:] for m in (re.findall(r"<td>(.*?)</td>", r) for r in table.split("<tr>")[2:])}


def test_runs_on_different_endpoints_differ_in_base_url(tmp_path):
    a = evaluate_run(tmp_path, "a", "--agents", "1", "--turns", "1", "--base-url", SERVER_A)
    b = evaluate_run(tmp_path, "b", "--agents", "1", "--turns", "1", "--base-url", SERVER_B)
    c = evaluate_run(tmp_path, "c", "--agents", "1", "--turns", "1")  # the provider's default endpoint
    text = build_view([a, b, c], out=tmp_path / "cmp.html").read_text()
    rows = diff_rows(text)
    assert rows["base_url"] == ["http://***@127.0.0.1:9/v1?key=***", SERVER_B, "–"]
    assert "pw-zq81" not in text and "alice7" not in text and "key-zq82" not in text
    # The same endpoint in both runs: listed once among the shared settings, not as a difference.
    same = build_view([b, b], out=tmp_path / "same.html").read_text()
    assert '<table class="hl settings-diff">' not in same and f"<td>base_url</td><td>{SERVER_B}</td>" in same


def test_an_unredacted_endpoint_in_a_config_is_redacted_on_the_page(tmp_path):
    # A run directory written by hand (or by an older version) with credentials in its endpoint.
    a = evaluate_run(tmp_path, "a", "--agents", "1", "--turns", "1")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    cfg = json.loads((b / "config.json").read_text())
    cfg["config"]["base_url"] = "http://bob:hunter2@10.0.0.1:8000/v1?api_key=sk-live"
    (b / "config.json").write_text(json.dumps(cfg))
    header = build_view([a, b], out=tmp_path / "cmp.html").read_text().split("full config")[0]
    assert diff_rows(header)["base_url"] == ["–", "http://***@10.0.0.1:8000/v1?api_key=***"]
    assert "hunter2" not in header and "sk-live" not in header
