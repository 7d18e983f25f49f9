"""The report figures: what is drawn (and what is not) for undefined values, zeros, intervals,
baselines, log axes and degenerate data. Figures are captured before they are written."""

from __future__ import annotations

import math

import pytest
from matplotlib.collections import LineCollection
from matplotlib.patches import Rectangle

from chateval.bench.judge_meta import plots as meta_plots
from chateval.bench import plots
from chateval.bench.judge_meta.faireval import FairEval
from chateval.bench.stats import wilson


@pytest.fixture
def figs(monkeypatch):
    """Every figure a plot function saves, kept open for inspection."""
    kept = []

    def save(fig, path, **kw):
        kept.append(fig)
        path.write_bytes(b"png")
        return path

    monkeypatch.setattr(plots, "save", save)
    yield kept
    for f in kept:
        plots.load().close(f)


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


def fe_summary(correct, n, kappa, labels=None, ci=None):
    return {"metrics": {"accuracy": {"value": None if n == 0 else correct / n, "n": n, "correct": correct},
                        "kappa": {"value": kappa, "n": n}, "human_labels": labels or {"1": 3, "2": 7},
                        "kappa_ci95": ci}}


def whiskers_of(ax):
    return [c.get_segments()[0][:, 1].tolist() for c in ax.collections if isinstance(c, LineCollection)]


def test_faireval_kappa_charts_and_table_carry_the_bootstrap_interval(figs, tmp_path):
    sums = [fe_summary(5, 10, 0.2, ci=[-0.1, 0.5]), fe_summary(0, 0, None), fe_summary(6, 10, 0.4, ci=[0.05, 0.7])]
    kappa = FairEval().charts(sums)[1]
    meta_plots.chart_bars(tmp_path / "k.png", ["a", "b", "c"], kappa, title="t")
    meta_plots.sweep_lines(tmp_path / "s.png", [1, 2, 3], kappa, title="t", xlabel="turns")
    for fig in figs:  # bars and lines alike: one whisker per defined kappa, at its interval
        assert sorted(whiskers_of(fig.axes[0])) == [pytest.approx([-0.1, 0.5]), pytest.approx([0.05, 0.7])]
    fe = FairEval()
    assert fe.metric_headers()[1] == "kappa [95% CI]"
    assert fe.metric_cells(sums[0]["metrics"])[1] == "0.200 [-0.100, 0.500]"
    assert fe.metric_cells(sums[1]["metrics"])[1] == "–"
    old = fe_summary(5, 10, 0.2)["metrics"]
    del old["kappa_ci95"]  # a summary written before the interval existed
    assert fe.metric_cells(old)[1] == "0.200" and fe.charts([{"metrics": old}])[1].intervals == {"Cohen's kappa": [None]}


@pytest.mark.slow
def test_faireval_verdicts_plot_has_n(figs, tmp_path):
    records = [{"status": "ok", "human": h, "pred": p} for h, p in [("1", "1"), ("2", "1"), ("tie", "2")]]
    records.append({"status": "failed", "human": "1"})
    metrics = FairEval().metrics(records)
    lines = FairEval().setting_report(tmp_path, {"setting": "multi", "metrics": metrics}, records)
    assert "human n=4, judge n=3" in figs[0].axes[0].get_title()
    # resamples drawing only the first question (both raters say "1") have no kappa and are skipped
    assert any("percentile bootstrap over the 3 judged questions" in ln and "of 1000 resamples used" in ln
               and "skipped: kappa undefined" in ln for ln in lines)


def test_faireval_charts_put_accuracy_in_percent_and_kappa_on_its_own_axis(figs, tmp_path):
    """The tables give accuracy in % and kappa as a -1..1 number: one chart each, never one axis."""
    acc, kappa = FairEval().charts([fe_summary(5, 10, 0.0), fe_summary(8, 10, -0.25)])
    assert (acc.key, kappa.key) == ("accuracy", "kappa")
    meta_plots.chart_bars(tmp_path / "a.png", ["single", "multi"], acc, title="t")
    meta_plots.chart_bars(tmp_path / "k.png", ["single", "multi"], kappa, title="t")
    a_ax, k_ax = figs[0].axes[0], figs[1].axes[0]
    # accuracy: % heights, % axis, the majority line at 70%, Wilson whiskers in %, n under each bar
    assert sorted(round(b.get_height(), 6) for b in bars_of(a_ax)) == [50.0, 80.0]
    assert a_ax.get_ylabel() == "accuracy (%)" and a_ax.get_ylim()[0] == 0 and a_ax.get_ylim()[1] >= 100
    assert any(list(ln.get_ydata()) == pytest.approx([70.0, 70.0]) for ln in a_ax.lines)
    lo, hi = wilson(5, 10)
    whiskers = [c.get_segments()[0][:, 1].tolist() for c in a_ax.collections if isinstance(c, LineCollection)]
    assert pytest.approx([100 * lo, 100 * hi]) in whiskers
    assert [t.get_text() for t in a_ax.get_xticklabels()] == ["single\n(n=10)", "multi\n(n=10)"]
    assert [t.get_text() for t in a_ax.get_legend().get_texts() if "kappa" in t.get_text()] == []
    # kappa: its own chart, the whole -1..1 scale, a zero line, and a 0 written with a visible stub
    assert [t.get_text() for t in k_ax.get_legend().get_texts()] == ["Cohen's kappa"]
    assert k_ax.get_ylim()[0] == -1 and k_ax.get_ylim()[1] >= 1 and "kappa" in k_ax.get_ylabel()
    assert sorted(round(b.get_height(), 6) for b in bars_of(k_ax)) == [-0.25, 0.0]
    assert "0" in texts(k_ax) and "-0.25" in texts(k_ax)
    assert any(list(ln.get_ydata()) == [0, 0] for ln in k_ax.lines)  # zero line / zero stub


def test_sweep_lines_keep_units_and_break_at_undefined_points(figs, tmp_path):
    acc, kappa = FairEval().charts([fe_summary(5, 10, 0.2), fe_summary(0, 0, None), fe_summary(6, 10, 0.4)])
    meta_plots.sweep_lines(tmp_path / "a.png", [1, 2, 3], acc, title="t", xlabel="turns")
    meta_plots.sweep_lines(tmp_path / "k.png", [1, 2, 3], kappa, title="t", xlabel="turns")
    a_ax, k_ax = figs[0].axes[0], figs[1].axes[0]
    line = next(ln for ln in a_ax.lines if ln.get_label() == "accuracy")
    ys = list(line.get_ydata())
    assert ys[0] == pytest.approx(50.0) and ys[2] == pytest.approx(60.0) and math.isnan(ys[1])  # a gap, not 0
    assert any(ln.get_marker() == "x" and list(ln.get_xdata()) == [2] for ln in a_ax.lines)
    assert a_ax.get_ylim() == (0, 100) and a_ax.get_ylabel() == "accuracy (%)"
    assert any(list(ln.get_ydata()) == pytest.approx([70.0, 70.0]) for ln in a_ax.lines)  # majority line
    assert [t.get_text() for t in a_ax.get_xticklabels()][0] == "1\n(n=10)"
    assert k_ax.get_ylim() == (-1, 1) and "accuracy" not in [ln.get_label() for ln in k_ax.lines]


def test_a_series_with_no_defined_value_keeps_its_colour_and_its_gap_stays_inside(figs, tmp_path):
    """Topical-Chat: a correlation undefined in every group used to take the default colour in
    the legend (another series' colour) and its last n/a sat on the right frame."""
    meta_plots.bars(tmp_path / "c.png", ["naturalness", "avg"], {"rouge_l": [0.1, 0.2], "judge": [None, None]},
                    title="t", ylabel="Spearman ρ")
    ax = figs[0].axes[0]
    legend = ax.get_legend()
    colours = [tuple(h.get_facecolor()) for h in legend.legend_handles]
    assert [t.get_text() for t in legend.get_texts()] == ["rouge_l", "judge"] and len(set(colours)) == 2
    assert colours == [tuple(c) for c in plots.colours(2)]
    x_max = ax.get_xlim()[1]
    assert [t for t in ax.texts if t.get_text() == "n/a" and t.get_position()[0] < x_max] == \
        [t for t in ax.texts if t.get_text() == "n/a"] and len([t for t in ax.texts if t.get_text() == "n/a"]) == 2


# --- intervals at 0% and 100%; a figure that fails to draw ------------------------------------------
@pytest.mark.parametrize("k,n", [(6, 6), (21, 21), (0, 11), (0, 22)])
def test_wilson_interval_contains_its_proportion_at_0_and_100_percent(k, n):
    lo, hi = wilson(k, n)
    assert lo <= k / n <= hi


def test_bars_at_100_percent_with_wilson_whiskers_are_drawn(tmp_path):
    path = plots.grouped_bars(tmp_path / "acc.png", ["a", "b"], {"s": [1.0, 0.0]},
                              intervals={"s": [wilson(6, 6), wilson(0, 11)]}, title="t", ylabel="accuracy", pct=True)
    assert path == tmp_path / "acc.png" and path.stat().st_size > 0


def test_a_figure_that_fails_to_draw_is_reported_not_raised(tmp_path, capsys):
    (tmp_path / "x.png").write_bytes(b"old")  # an earlier attempt's figure would contradict the report
    got = plots.grouped_bars(tmp_path / "x.png", ["a"], {"s": ["not a number"]}, title="t", ylabel="y")  # type: ignore[list-item]
    assert isinstance(got, str) and got.startswith("drawing failed")
    assert not (tmp_path / "x.png").exists()
    assert "plot x.png not drawn" in capsys.readouterr().err
