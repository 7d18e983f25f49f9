"""LoCoMo's official answer scoring (task_eval/evaluation.py), re-implemented: answer
normalisation, token F1 per category, BLEU-1 and evidence recall. Pure functions."""

from __future__ import annotations

import re
import string
import warnings
from collections import Counter
from functools import lru_cache
from statistics import mean
from typing import Any, Literal

ADVERSARIAL = 5


# --- official answer scoring, re-implemented -------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: drop commas, lower-case, drop ASCII punctuation, drop the words
    a/an/the/and, collapse whitespace (in that order)."""
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def answer_tokens(text: str) -> list[str]:
    """Normalised words, each reduced by the Porter stemmer (as the official F1 does)."""
    stem = _stemmer().stem
    return [stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall over the stemmed multisets (0 if no overlap)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    p, r = same / len(pred), same / len(ref)
    return 2 * p * r / (p + r)


def multi_hop_f1(prediction: str, gold: str) -> float:
    """Each comma-separated gold part takes its best F1 against any comma-separated part of the
    prediction; the score is the mean over gold parts."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return mean(max(token_f1(p, g) for p in preds) for g in golds)


def says_not_mentioned(prediction: str) -> bool:
    low = prediction.lower()
    return "no information available" in low or "not mentioned" in low


def scoring_gold(category: int, gold: str) -> str:
    """The gold string F1/BLEU compare against: category 3 keeps only the text before ';'."""
    return gold.split(";")[0].strip() if category == 3 else gold


def locomo_f1(category: int, prediction: str, gold: str) -> float:
    """The official per-category QA score (called F1 in the paper's tables)."""
    if category == ADVERSARIAL:
        return 1.0 if says_not_mentioned(prediction) else 0.0
    if category == 1:
        return float(multi_hop_f1(prediction, gold))
    if category in (2, 3, 4):
        return token_f1(prediction, scoring_gold(category, gold))
    raise ValueError(f"unknown LoCoMo category {category}")


def bleu1(prediction: str, gold: str) -> float:
    """Sentence BLEU with unigram weights only (1, 0, 0, 0): clipped unigram precision times the
    brevity penalty, on ``answer_tokens`` of both sides, smoothing method1; 0 if either is empty."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hyp, ref = answer_tokens(prediction), answer_tokens(gold)
    if not hyp or not ref:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sentence_bleu([ref], hyp, weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1))


def locomo_bleu1(category: int, prediction: str, gold: str) -> float | None:
    """BLEU-1 against the scoring gold; None for adversarial questions (their gold is a wrong answer)."""
    return None if category == ADVERSARIAL else bleu1(prediction, scoring_gold(category, gold))


# QA that list no evidence ids: "one" scores them 1.0 as LoCoMo's official code does (nothing to
# miss); "exclude" leaves them out of the mean. Either way reports show how many there were.
EvidenceEmpty = Literal["one", "exclude"]


def evidence_recall(evidence: list[str], retrieved: list[str] | None, empty: EvidenceEmpty = "one") -> float | None:
    """Share of the distinct evidence dialogue ids found among the retrieved ids; None when the
    system exposes no retrieval; for a QA with no evidence ids, 1.0 or None as ``empty`` says."""
    gold = list(dict.fromkeys(evidence))
    if retrieved is None:
        return None
    if not gold:
        return 1.0 if empty == "one" else None
    got = set(retrieved)
    return sum(1 for e in gold if e in got) / len(gold)


def category_name(category: int) -> str:
    from ...datasets.locomo import CATEGORIES

    return CATEGORIES.get(category, str(category))
