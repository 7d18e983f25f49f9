"""Non-LLM baselines for dialogue response evaluation, computed offline.

What each one computes, exactly:

- ``rouge_l``  ROUGE-L F-measure of the response against the reference response, with Google's
  ``rouge-score`` package (its default tokenizer: lower-case, alphanumeric tokens; Porter stemmer on).
- ``bleu4``    sentence BLEU-4 (uniform 1-4-gram weights, brevity penalty) of the response against
  the reference with NLTK, tokens = lower-cased whitespace tokens (the Topical-Chat text is already
  tokenised), smoothing = Chen & Cherry (2014) method 3, the NIST geometric smoothing that
  sacreBLEU calls ``exp``.
- ``bertscore_minilm``  BERTScore-style greedy matching F1 (Zhang et al. 2020) with the token
  embeddings of all-MiniLM-L6-v2's last layer (sentence-transformers ``output_value=
  "token_embeddings"``, [CLS]/[SEP] dropped): precision = mean over response tokens of the best
  cosine with a reference token, recall = the same from the reference side, F1 their harmonic
  mean. No IDF weighting and no baseline rescaling, so it is *not* the official BERTScore number.
- ``cos_context`` cosine of the MiniLM sentence embeddings (mean pooling, normalised) of the response
  and the dialogue history; the history is cut to its most recent whole turns that fit in MiniLM's
  256-word-piece window (the model would otherwise keep the *oldest* text).
- ``cos_fact``   the same cosine between the response and the knowledge fact (first 256 word pieces).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the metric names are read by `chateval bench topical-chat --help`
    import numpy as np

REFERENCE_METRICS = ("rouge_l", "bleu4", "bertscore_minilm")
CONTEXT_METRICS = ("cos_context", "cos_fact")
ALL_METRICS = REFERENCE_METRICS + CONTEXT_METRICS
EMBEDDING_METRICS = ("bertscore_minilm", "cos_context", "cos_fact")

DESCRIPTIONS = {
    "rouge_l": "ROUGE-L F1 vs reference (rouge-score, stemmed)",
    "bleu4": "sentence BLEU-4 vs reference (NLTK, smoothing method 3)",
    "bertscore_minilm": "greedy token-matching F1 vs reference, MiniLM-L6 token embeddings (BERTScore-style, no IDF/rescale)",
    "cos_context": "MiniLM sentence cosine: response vs dialogue history (recent turns within 256 word pieces)",
    "cos_fact": "MiniLM sentence cosine: response vs knowledge fact",
}


def tokens(text: str) -> list[str]:
    return text.lower().split()


@lru_cache(maxsize=1)
def _rouge_scorer():  # building the scorer loads NLTK's Porter stemmer: once per process
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(candidate: str, reference: str) -> float:
    return float(_rouge_scorer().score(reference, candidate)["rougeL"].fmeasure)


def bleu4(candidate: str, reference: str) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    return float(
        sentence_bleu([ref], cand, weights=(0.25, 0.25, 0.25, 0.25), smoothing_function=SmoothingFunction().method3)
    )


def greedy_match(cand: np.ndarray, ref: np.ndarray) -> tuple[float, float, float] | None:
    """(precision, recall, F1) of BERTScore's greedy matching between two token-embedding
    matrices (rows = tokens; normalised here). None when either side has no tokens."""
    if len(cand) == 0 or len(ref) == 0:
        return None
    import numpy as np

    c = cand / np.linalg.norm(cand, axis=1, keepdims=True).clip(min=1e-12)
    r = ref / np.linalg.norm(ref, axis=1, keepdims=True).clip(min=1e-12)
    sim = c @ r.T
    p = float(sim.max(axis=1).mean())
    rec = float(sim.max(axis=0).mean())
    f = 0.0 if p + rec <= 0 else 2 * p * rec / (p + rec)
    return p, rec, f


class MiniLMScorer:
    """Token- and sentence-level MiniLM scores, from the offline all-MiniLM-L6-v2 wheel."""

    MAX_PIECES = 256

    def __init__(self, cache: bool = True) -> None:
        from ..memory.embeddings import SentenceTransformerEmbedder

        self.cache = cache
        self.embedder = SentenceTransformerEmbedder(cache=cache)
        self.model = self.embedder._load()  # ConfigError with the install hint when the extra is missing
        self.name = self.embedder.name

    def __reduce__(self) -> tuple[Any, ...]:
        return (MiniLMScorer, (self.cache,))  # a Ray worker loads its own copy of the model

    def token_embeddings(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = self.model.encode(
            list(texts), output_value="token_embeddings", batch_size=32, convert_to_numpy=False, show_progress_bar=False
        )
        import numpy as np

        # Drop [CLS] and [SEP]: BERTScore matches content tokens only.
        return [np.asarray(t.detach().cpu().numpy()[1:-1], dtype=np.float32) for t in out]

    def bertscore(self, candidates: Sequence[str], references: Sequence[str]) -> list[float | None]:
        texts = list(dict.fromkeys(list(candidates) + list(references)))
        emb = dict(zip(texts, self.token_embeddings(texts)))
        out: list[float | None] = []
        for c, r in zip(candidates, references):
            m = greedy_match(emb[c], emb[r])
            out.append(None if m is None else m[2])
        return out

    def recent_turns(self, turns: Sequence[str]) -> str:
        """The most recent whole turns whose word pieces fit the model window ([CLS]/[SEP] aside)."""
        budget = min(self.MAX_PIECES, self.model.max_seq_length) - 2
        kept: list[str] = []
        used = 0
        for t in reversed(list(turns)):
            n = len(self.model.tokenizer.tokenize(t)) + (1 if kept else 0)
            if kept and used + n > budget:
                break
            kept.append(t)
            used += n
        return "\n".join(reversed(kept))

    async def cosine(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """Row-wise cosine of the normalised sentence embeddings (cached on disk by text)."""
        if not a:
            return []
        ea, eb = await self.embedder.embed(list(a)), await self.embedder.embed(list(b))
        return [float(x @ y) for x, y in zip(ea, eb)]
