"""LoCoMo (``chateval bench locomo``): official F1, BLEU-1, an LLM judge and evidence recall per
category of memory systems on locomo10.json-format conversations. See README.md.

Imports nothing: ``settings`` is read by ``--help`` without loading the benchmark."""
