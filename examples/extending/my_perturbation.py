"""A perturbation in a plugin file: one answer written in capitals, which should not change a
verdict on content.

    chateval audit examples/faireval_pairwise.jsonl --out runs/shout \\
        --plugin examples/extending/my_perturbation.py --perturbation shouting

The audit judges each item as it is and once per variant, and reports the flip rate of the
``formatting`` bias with its Wilson interval and which way the flips go (toward the answer in
capitals, or away from it). ``chateval perturbations`` lists it once the plugin is loaded. An
installed package registers the function under the ``chateval.perturbations`` entry point group.
"""

from __future__ import annotations

from chateval.auditing import Skip, Variant, perturbation


@perturbation("shouting", bias="formatting", description="one answer in capital letters")
def shouting(sample, ctx):
    """Each answer in turn in capitals (pairwise), or the one answer (score, correctness)."""
    fields = [("1", "answer_1"), ("2", "answer_2")] if ctx.task == "pairwise" else [("answer", "answer")]
    variants = []
    for side, field in fields:
        text = getattr(sample, field)
        if text.upper() == text:  # nothing to change: the variant would be the item itself
            continue
        suffix = "" if side == "answer" else f"-{side}"
        variants.append(Variant(name=f"caps{suffix}", sample=sample.model_copy(update={field: text.upper()}),
                                favours=side))
    if not variants:
        raise Skip("every answer is in capitals already")
    return variants
