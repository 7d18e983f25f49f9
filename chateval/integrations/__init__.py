"""The debate panel inside other harnesses: ``chateval.integrations.inspect.debate_scorer``
(an Inspect AI scorer) and ``chateval.integrations.deepeval.DebateMetric`` (a DeepEval metric).

Each submodule imports its harness when it is imported itself, never before: chateval runs
without Inspect AI or DeepEval installed (extras ``chateval[inspect]``, ``chateval[deepeval]``)."""
