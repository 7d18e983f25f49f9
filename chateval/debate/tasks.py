"""Task formats: everything one kind of judgement needs, in one class. What a sample must contain
and which labels it may carry, which prompts judge it, how a reply is read, how the debaters'
verdicts combine, what the run's summary, report and viewer say about its verdicts, and how the
offline model answers it. The built-ins (pairwise, score, correctness) are in task_formats; a
plugin registers another with ``@TASKS.register("name")`` or the ``chateval.tasks`` entry point.

The base class implements a *classifying* task: the verdict names one of ``classes`` (stored as
``choice``), labels are those classes, the panel votes, and agreement is accuracy and Cohen's kappa."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from ..stats.agreement import accuracy, baselines, cohen_kappa, kappa_ci95
from ..util.errors import ConfigError
from ..util.registry import Registry
from .samples import AgentVerdict, Method, Sample, Verdict

if TYPE_CHECKING:
    from .debaters import DebateTurnInputs

MAX_NAME_CHARS = 200  # ids, labels and aspect names are names, not text


class TaskFormat:
    name: str = ""  # the registered name (filled in from the registration when left out)
    description: str  # for the summarizer: "evaluating ..."
    required: tuple[str, ...]
    schema: type[BaseModel]
    aggregates: tuple[Method, ...] = ("vote",)
    default_aggregate: Method = "vote"
    # A classifying task: the verdicts it names, as labels give them (e.g. ("yes", "no")).
    classes: tuple[Any, ...] = ()
    # Templates the task ships itself (name -> jinja source), e.g. a plugin file's
    # "<name>_system.j2" and "<name>_verdict.j2"; a --prompt-dir file of the same name wins.
    prompts: ClassVar[dict[str, str]] = {}
    # How several annotators' labels combine (the calibration report's wording).
    reference_kind: str = "majority"
    # calibrate: its agreement measures (accuracy and kappa for classes, spearman and kendall for
    # scores) and the one settings are ranked by.
    metrics: tuple[str, ...] = ("accuracy", "kappa")
    primary_metric: str = "kappa"

    @property
    def system_template(self) -> str:
        return f"{self.name}_system.j2"

    @property
    def templates(self) -> list[str]:
        return [self.system_template, f"{self.name}_verdict.j2"]

    def schema_for(self, sample: Sample) -> type[BaseModel]:
        """The verdict schema sent to the server for this sample."""
        return self.schema

    def missing(self, sample: Sample) -> list[str]:
        # Empty strings are allowed here (an assistant may say nothing); files reject them earlier.
        return [f for f in self.required if getattr(sample, f) is None]

    def check_aggregate(self, method: Method) -> None:
        if method not in self.aggregates:
            raise ConfigError(
                f"--aggregate {method} does not apply to the {self.name} task (use {' or '.join(self.aggregates)})"
            )

    # --- labels ----------------------------------------------------------------------------
    def normalise_label(self, label: Any) -> Any:
        """One annotator's label as the verdict expresses it; None if unusable."""
        if label is None or isinstance(label, (dict, list)):
            return None
        s = str(label).strip().lower()
        return next((c for c in self.classes if str(c).lower() == s), None)

    def check_label(self, label: Any) -> None:
        """Raise ValueError when one annotator's label means nothing for the task."""
        if self.normalise_label(label) is None:
            expected = " or ".join(json.dumps(c) for c in self.classes) or "no labels"
            raise ValueError(
                f"field 'label': {json.dumps(label)[:60]} is not a {self.name} label (expected "
                f"{expected} or a list of them, one per annotator)"
            )

    def check_labels(self, labels: list[Any]) -> None:
        """Raise ValueError when several annotators' labels do not go together."""

    def annotator_labels(self, label: Any) -> list[Any]:
        raw = label if isinstance(label, list) else [label]
        return [v for v in (self.normalise_label(x) for x in raw) if v is not None]

    def combine_labels(self, labels: list[Any]) -> Any:
        """Several annotators' labels -> the reference: their plurality (None when split)."""
        counts = Counter(labels).most_common()
        if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
            return None
        return counts[0][0]

    def reference(self, label: Any) -> Any:
        """The reference of a record's label (one annotator's, or the annotators' combined)."""
        return self.combine_labels(self.annotator_labels(label))

    def leave_one_out(self, label: Any) -> list[tuple[Any, Any]]:
        """(one annotator's label, the others' reference) per annotator of an item with two or more."""
        labels = self.annotator_labels(label)
        if len(labels) < 2:
            return []
        pairs = [(own, self.combine_labels(labels[:i] + labels[i + 1 :])) for i, own in enumerate(labels)]
        return [(own, other) for own, other in pairs if other is not None]

    # --- reading a reply and combining the panel ---------------------------------------------
    def read(self, text: str, sample: Sample, verdict: AgentVerdict) -> None:
        """Fill ``verdict`` from the reply text; raises VerdictParseError."""
        raise NotImplementedError

    def verdict_key(self, verdict: AgentVerdict) -> object:
        """What two debaters must share to state "the same verdict" (--stop-early)."""
        return verdict.choice

    def combine(self, method: Method, valid: list[AgentVerdict], out: Verdict) -> Verdict:
        """The panel's verdict from the readable ones: a plurality vote over the choices."""
        counts = Counter(v.choice for v in valid if v.choice is not None)
        out.votes = {str(c): counts.get(c, 0) for c in self.classes} or dict(counts)
        top = max(counts.values(), default=0)
        leaders = sorted(c for c, n in counts.items() if n == top)
        if len(leaders) == 1:
            out.choice = leaders[0]
        else:
            out.tie, out.note = True, "split vote: " + ", ".join(f"{c}={counts[c]}" for c in leaders)
        return out

    # --- what the run's records, summary, report and viewer say --------------------------------
    def prediction(self, verdict: dict[str, Any]) -> Any:
        """A record's verdict as its label would say it (compared with the reference)."""
        return verdict.get("choice")

    def summarize(self, ok: list[dict[str, Any]]) -> dict[str, Any]:
        """The task's fields of summary.json, from the records judged ok."""
        return {"verdicts": dict(Counter(self.prediction(r["verdict"]) for r in ok if r.get("verdict")))}

    def label_accuracy(self, labelled: list[tuple[dict[str, Any], Any]]) -> dict[str, Any]:
        """summary.json's label_accuracy over (record, reference) pairs."""
        hits = sum(1 for r, lab in labelled if self.prediction(r["verdict"]) == lab)
        return {"n": len(labelled), "accuracy": hits / len(labelled)}

    def agreement(self, ok: list[dict[str, Any]]) -> dict[str, Any]:
        """report.md's agreement with the labels: accuracy and Cohen's kappa over the classes;
        {} when no record has a usable label. ``ok``: the judged records in sample order."""
        pairs = [(self.reference(r.get("label")), self.prediction(r["verdict"])) for r in ok]
        # A split panel (no verdict) counts as a miss for accuracy and drops from kappa.
        pairs = [(g, p) for g, p in pairs if g is not None]
        if not pairs:
            return {}
        classes = list(self.classes)
        gold, pred = [g for g, _ in pairs], [p for _, p in pairs]
        acc = accuracy(gold, ["none" if p is None else p for p in pred])
        boot = kappa_ci95(gold, pred, classes)
        return {
            "accuracy": acc,
            **baselines(gold, pred, classes),
            "kappa": cohen_kappa(gold, pred, classes),
            "kappa_ci95": boot.pop("ci95"),
            "kappa_bootstrap": boot,
        }

    def report_rows(self, summary: dict[str, Any]) -> list[str]:
        """report.md's table rows about the verdicts (markdown, from summary.json)."""
        if not summary.get("verdicts"):
            return []
        return [f"| verdicts | {', '.join(f'{k}: {v}' for k, v in summary['verdicts'].items())} |"]

    def card(self, verdict: dict[str, Any]) -> Any:
        """What the viewer shows as a verdict (a record's, an order's or one debater's)."""
        return verdict.get("choice")

    # --- the offline model --------------------------------------------------------------------
    def offline_answers(self, sample: Sample) -> list[tuple[str, str | None]]:
        """The answers the offline debater describes, with how it names them."""
        return [("The response", sample.answer)]

    def offline_lean(self, inp: DebateTurnInputs) -> str:
        """What the offline debater says it leans towards in a non-final round."""
        return ""

    def offline_verdict(self, inp: DebateTurnInputs, fmt: type[BaseModel] | None, reasoning: str) -> str | BaseModel:
        """The offline model's verdict: a ``fmt`` instance when the call asks for the schema,
        else a reply text that ``read`` understands."""
        raise ConfigError(
            f"the offline model cannot judge the {self.name} task (its format defines no offline_verdict)"
        )


TASKS: Registry[type[TaskFormat]] = Registry("task", entry_points="chateval.tasks")
for _name in ("pairwise", "score", "correctness"):  # registered by task_formats when first asked for
    TASKS.register_lazy(_name, "chateval.debate.task_formats")


def get_task(name: str) -> TaskFormat:
    fmt = TASKS.get(name)()
    if not fmt.name:
        fmt.name = name
    return fmt


def task_names() -> list[str]:
    """The registered tasks, the built-ins first (the order --help and errors list them in)."""
    builtin = ["pairwise", "score", "correctness"]
    return builtin + [n for n in TASKS.names() if n not in builtin]
