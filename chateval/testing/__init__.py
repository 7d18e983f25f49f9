"""Test and benchmark helpers (a fake OpenAI-compatible endpoint); not used at run time."""
