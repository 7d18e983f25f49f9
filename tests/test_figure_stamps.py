"""A figure is drawn once per set of inputs: a report written again from the same numbers keeps
its PNGs (and never imports matplotlib); other inputs, or other drawing code, draw it again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chateval.bench import plots
from chateval.runs.figure_stamps import png_stamp

FIXTURES = Path(__file__).parent / "fixtures"


def bars(path: Path, values: list[float | None]) -> Path | str:
    return plots.grouped_bars(path, ["a", "b"], {"s": values}, title="t", ylabel="y")


def test_same_inputs_keep_the_png_other_inputs_draw_it_again(tmp_path, monkeypatch):
    png = tmp_path / "f.png"
    assert bars(png, [0.5, 0.25]) == png and png_stamp(png)
    first = png.read_bytes()

    def no_drawing():
        raise AssertionError("drawn again")

    monkeypatch.setattr(plots, "load", no_drawing)
    assert bars(png, [0.5, 0.25]) == png and png.read_bytes() == first  # up to date: kept
    # other numbers: drawn (here the drawing fails, so the stale figure is removed, as always)
    assert isinstance(bars(png, [0.5, 0.75]), str) and not png.exists()
    monkeypatch.undo()
    assert bars(png, [0.5, 0.75]) == png and png.read_bytes() != first


def test_a_png_without_our_stamp_is_drawn_again(tmp_path):
    png = tmp_path / "f.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")  # another program's file, or one drawn before stamps
    assert png_stamp(png) is None
    assert bars(png, [0.5, 0.25]) == png and png_stamp(png) is not None


def python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_nothing_to_plot_imports_no_matplotlib(tmp_path):
    code = (
        "import sys; from pathlib import Path; from chateval.bench import plots\n"
        f"r = plots.grouped_bars(Path({str(tmp_path / 'f.png')!r}), ['a'], {{'s': [None]}}, title='t', ylabel='y')\n"
        "print(r, 'matplotlib' in sys.modules)"
    )
    assert python(code).split() == ["no", "defined", "value", "to", "draw", "False"]


def test_a_finished_runs_resume_keeps_its_figures_without_matplotlib(tmp_path):
    from chateval.bench import run

    out = tmp_path / "run"
    cfg = {
        "data": str(FIXTURES / "lme_tiny.json"),
        "embedder": "hash",
        "answer_model": "offline",
        "cache": False,
        "systems": ["full_context", "retrieval"],
        "out": str(out),
    }
    run("longmemeval", cfg)
    pngs = {p.name: p.read_bytes() for p in out.glob("*.png")}
    assert pngs  # the report has figures
    code = (
        "import sys, json; from chateval.bench import run\n"
        f"run('longmemeval', json.loads({json.dumps(json.dumps(cfg | {'resume': True}))}))\n"
        "print('matplotlib' in sys.modules)"
    )
    assert python(code).strip() == "False"
    assert {p.name: p.read_bytes() for p in out.glob("*.png")} == pngs
