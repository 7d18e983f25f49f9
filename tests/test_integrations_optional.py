"""The integrations' harnesses are optional: importing chateval (and its integrations package)
never imports Inspect AI, DeepEval or Ray."""

from __future__ import annotations

import subprocess
import sys


def test_chateval_imports_without_the_optional_harnesses():
    code = ("import sys, chateval, chateval.integrations, chateval.bench, chateval.cli; "
            "bad = [m for m in ('inspect_ai', 'deepeval', 'ray') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
