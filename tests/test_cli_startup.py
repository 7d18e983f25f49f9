"""`chateval ... --help` builds its parsers from light modules: no benchmark, model layer, numpy or
openai is imported, and the parsers built that way show exactly what the benchmarks' own classes
declare. (How fast that is, is measured by benchmarks/startup.py, not asserted here.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing

import pytest

from chateval.bench.registry import BENCHMARKS, BUILTIN, describe

# Imported by none of the --help commands: each costs a large share of the start-up budget.
HEAVY = ["numpy", "scipy", "matplotlib", "openai", "autogen_core", "autogen_agentchat", "httpx", "torch",
         "qdrant_client", "sentence_transformers", "rich", "chateval.models", "chateval.debate", "chateval.memory",
         "chateval.bench.base", "chateval.bench.api", *(f"chateval.bench.{m}" for m, _, _ in BUILTIN.values())]

# In a fresh interpreter: every command's --help through main() (as the `chateval` script runs
# it), the modules that were imported, then the same help texts with every benchmark imported.
SCRIPT = """
import argparse, contextlib, io, json, sys
from chateval.cli import build_parser, main

def commands(parser, prefix):
    yield prefix
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from commands(sub, prefix + [name])

def helps():
    out = {}
    for c in cmds:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            main(c + ["--help"])
        out[" ".join(c)] = buf.getvalue()
    return out

cmds = list(commands(build_parser(None), []))
lazy = helps()
heavy = sorted(m for m in HEAVY if m in sys.modules)
from chateval.bench import BENCHMARKS
for name in BENCHMARKS.names():
    BENCHMARKS.get(name)  # imports the benchmark: its parser now comes from its class
print(json.dumps({"heavy": heavy, "lazy": lazy, "eager": helps()}))
"""


@pytest.mark.slow
def test_help_imports_no_heavy_module_and_matches_the_benchmarks_classes():
    script = f"HEAVY = {HEAVY!r}\n" + SCRIPT
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["heavy"] == []
    assert "bench longmemeval" in out["lazy"] and "memory ask" in out["lazy"] and "data get" in out["lazy"]
    assert all(text.startswith("usage: chateval") for text in out["lazy"].values())
    for command, text in out["lazy"].items():
        assert text == out["eager"][command], command


@pytest.mark.slow
def test_describe_is_what_the_benchmark_class_declares():
    lazy = {name: describe(name) for name in BUILTIN}
    for name, (description, model, metrics) in lazy.items():
        cls = BENCHMARKS.get(name)
        assert (description, model, metrics) == (cls.description, cls.config_model, cls.gate_metrics)
        assert describe(name) == (cls.description, cls.config_model, cls.gate_metrics)  # now read from the class


def test_locomo_answer_style_choices_are_the_memory_layers():
    from chateval.bench.locomo.settings import AnswerStyle
    from chateval.memory.answer import AnswerStyle as memory_styles

    assert typing.get_args(AnswerStyle) == typing.get_args(memory_styles)
