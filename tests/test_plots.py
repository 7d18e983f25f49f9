"""The report figures: what is drawn (and what is not) for undefined values, zeros, intervals,
baselines, log axes and degenerate data. Figures are captured before they are written."""

from __future__ import annotations

import pytest
from matplotlib.collections import LineCollection
from matplotlib.patches import Rectangle

from chateval.bench import meta_plots, plots
from chateval.bench.faireval import FairEval


@pytest.fixture
def figs(monkeypatch):
    """Every figure a plot function saves, kept open for inspection."""
    kept = []

    def save(fig, path, **kw):
        kept.append(fig)
        path.write_bytes(b"png")
        return path

    monkeypatch.setattr(plots, "_save", save)
    yield kept
    for f in kept:
        plots.plt.close(f)


def bars_of(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def texts(ax):
    return [t.get_text() for t in ax.texts]


def test_undefined_is_a_marked_gap_and_zero_is_written(figs, tmp_path):
    plots.grouped_bars(tmp_path / "a.png", ["x", "y", "z"], {"s": [0.5, None, 0.0]}, title="t", ylabel="acc",
                       pct=True)
    ax = figs[0].axes[0]
    heights = sorted(round(b.get_height(), 6) for b in bars_of(ax))
    assert heights == [0.0, 50.0]  # two bars: the undefined value is not drawn as 0
    assert "n/a" in texts(ax) and "50" in texts(ax) and "0" in texts(ax)
    assert ax.get_ylabel() == "acc (%)" and ax.get_ylim()[1] >= 100  # % like the table
    stub = [ln for ln in ax.lines if list(ln.get_ydata()) == [0, 0]]
    assert stub, "a zero bar gets a visible stub"


def test_intervals_baselines_and_n_labels(figs, tmp_path):
    plots.grouped_bars(tmp_path / "b.png", [plots.n_label("type", [4, 5])], {"s": [0.5]},
                       intervals={"s": [(0.2, 0.8)]}, baselines={"majority": 0.6}, title="t", ylabel="acc")
    ax = figs[0].axes[0]
    assert ax.get_xticklabels()[0].get_text() == "type\n(n=4–5)"
    whiskers = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert whiskers and whiskers[0].get_segments()[0][:, 1].tolist() == pytest.approx([0.2, 0.8])
    assert any(list(ln.get_ydata()) == [0.6, 0.6] and ln.get_label() == "majority" for ln in ax.lines)


def test_nothing_defined_is_not_drawn(figs, tmp_path):
    (tmp_path / "c.png").write_bytes(b"old")
    why = plots.grouped_bars(tmp_path / "c.png", ["x"], {"s": [None]}, title="t", ylabel="y")
    assert isinstance(why, str) and not figs and not (tmp_path / "c.png").exists()
    # the meta-benchmark bars still draw the gaps: an undefined correlation is a result to show
    assert meta_plots.bars(tmp_path / "d.png", ["x"], {"s": [None]}, title="t", ylabel="y") == tmp_path / "d.png"
    assert "n/a" in texts(figs[0].axes[0])


def test_degenerate_scatter_is_skipped_with_a_reason(figs, tmp_path):
    why = plots.scatter(tmp_path / "s.png", {"a": (0.0, 0.5), "b": (0.0, 0.7)}, title="t", xlabel="cost",
                        ylabel="acc", what="answer cost")
    assert why == "every system has the same answer cost (0), so the axis has nothing to show" and not figs
    assert "fewer than two" in plots.scatter(tmp_path / "s.png", {"a": (None, 0.5), "b": (1.0, 0.7)},
                                             title="t", xlabel="c", ylabel="a")
    assert plots.skipped("s.png", why)[0].startswith("*Plot `s.png` not drawn: every system")


def test_log_axis_has_few_readable_ticks(figs, tmp_path):
    plots.scatter(tmp_path / "l.png", {"retrieval": (310.0, 0.5), "full": (118_000.0, 0.5)}, title="t",
                  xlabel="tokens", ylabel="acc", logx=True, pct=True)
    ax = figs[0].axes[0]
    figs[0].canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels == ["1k", "10k", "100k"]
    assert not [t for t in ax.get_xticklabels(minor=True) if t.get_text()]
    assert ax.get_ylim() == (0, 105)  # equal accuracies stay equal on the full scale


def test_distinct_colours_beyond_ten_series():
    assert len(set(plots.colours(12))) == 12 and len(set(plots.colours(5))) == 5


def test_win_tie_loss_whiskers(figs, tmp_path):
    plots.stacked_bars(tmp_path / "w.png", {"overall (n=10)": [0.5, 0.2, 0.3]}, ["A wins", "tie", "B wins"],
                       title="t", intervals={"overall (n=10)": ((0.3, 0.7), (0.1, 0.6))})
    ax = figs[0].axes[0]
    segs = [c.get_segments()[0][:, 0].tolist() for c in ax.collections if isinstance(c, LineCollection)]
    # A's win interval at the end of the win segment; B's mirrored at the start of the loss segment
    assert segs == [pytest.approx([0.3, 0.7]), pytest.approx([0.4, 0.9])]


def test_recall_panels_show_both_recalls_with_the_legend_below(figs, tmp_path):
    plots.line_panels(tmp_path / "r.png", [1, 5], {"session level": {"bm25": {"recall_any": [0.5, 1.0],
                                                                            "recall_all": [0.2, None]}}},
                      title="t", xlabel="k", ylabel="recall")
    fig = figs[0]
    assert len(fig.axes[0].lines) == 2
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["bm25", "recall_any", "recall_all"]
    fig.canvas.draw()
    assert legend.get_window_extent().y1 <= fig.axes[0].get_window_extent().y0  # under the axes


def test_faireval_majority_baseline():
    summaries = [{"metrics": {"human_labels": {"1": 3, "2": 7, "tie": 2}}}]
    [(name, value)] = FairEval().plot_baselines(summaries).items()
    assert value == pytest.approx(7 / 12) and "Vicuna" in name
    assert FairEval().plot_baselines([{"metrics": {}}]) == {}
