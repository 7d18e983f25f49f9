"""answer_check, a benchmark in a plugin package shaped like the built-in ones (chateval/bench/<name>/):
``settings.py`` (its options), ``answer_check.py`` (the benchmark), ``report.py`` (summary and
report.md), README.md. See README.md for how to run it.

Unlike a built-in, whose package imports nothing (the registry imports it on first use), a plugin
registers by being imported: ``--plugin examples/extending/answer_check`` runs this file."""

from .answer_check import AnswerCheck

__all__ = ["AnswerCheck"]
