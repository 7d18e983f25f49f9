"""The record of one paired comparison, and how summaries write and read a list of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, computed_field

RESAMPLES = 2000  # bootstrap resamples and Monte-Carlo permutations behind every comparison
SEED = 0  # fixed, so a rerun over the same records reports the same interval and p-value
MIN_ITEMS = 2  # one item gives a degenerate interval: not a measurement
MAX_ALL_PAIRS = 4  # up to this many systems every pair is compared; beyond, each against the first
# Below this many clusters a cluster bootstrap undercovers: the interval is the inverted exact
# permutation test (means) or a jackknife t (other statistics), see chateval.paired.few.
FEW_CLUSTERS = 20
ALPHA = 0.05  # the level "excludes zero" and "significant" refer to


class PairedDifference(BaseModel):
    """One paired comparison: ``diff = value_a - value_b`` over the items defined on both sides."""

    format_version: Literal[1] = 1
    metric: str  # "accuracy", "f1", "kappa", "spearman", "win_rate", ...
    a: str
    b: str
    n: int  # items used (a value on both sides)
    n_clusters: int | None = None  # when items were resampled and permuted in clusters
    value_a: float | None = None
    value_b: float | None = None
    diff: float | None = None
    ci95: tuple[float, float] | None = None  # 95% interval of the difference (``interval`` says which)
    # "percentile_bootstrap", or with fewer than FEW_CLUSTERS clusters "inverted_permutation"
    # (a mean) / "cluster_jackknife_t" (a whole-sample statistic)
    interval: str | None = None
    p_value: float | None = None  # two-sided
    test: str | None = None  # "mcnemar_exact", "permutation_exact", "cluster_permutation_mc", ...
    resamples: int = RESAMPLES
    resamples_used: int | None = None  # bootstrap resamples in which the difference was defined
    seed: int = SEED
    reason: str | None = None  # why something above is None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def few_clusters(self) -> bool:
        """Resampled in fewer than FEW_CLUSTERS clusters: a report must say so."""
        return self.n_clusters is not None and self.n_clusters < FEW_CLUSTERS

    @computed_field  # type: ignore[prop-decorator]
    @property
    def excludes_zero(self) -> bool | None:
        """Whether the 95% interval lies wholly on one side of 0 *and* the paired test agrees
        (p <= 0.05; None without an interval). A bootstrap over many units of which only a few
        differ (or over few clusters) can exclude 0 while the exact test cannot reject: a
        difference is never called when the test does not call it."""
        if self.ci95 is None:
            return None
        outside = self.ci95[0] > 0 or self.ci95[1] < 0
        if self.p_value is not None and self.p_value > ALPHA:
            return False
        if self.few_clusters and self.p_value is None:
            return False
        return outside


def dump_comparisons(comparisons: Sequence[PairedDifference]) -> list[dict[str, Any]]:
    """The ``comparisons`` list of a summary.json."""
    return [c.model_dump(mode="json") for c in comparisons]


def read_comparisons(summary: Mapping[str, Any]) -> list[PairedDifference]:
    """The ``comparisons`` of a summary.json (or of any dict holding that list)."""
    return [PairedDifference.model_validate(c) for c in summary.get("comparisons") or []]
