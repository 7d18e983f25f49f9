"""Multi-Session Chat response generation (``chateval bench msc-response``, THEANINE's
evaluation): each system generates the next utterance of a later session. See README.md.

Imports nothing: ``settings`` is read by ``--help`` without loading the benchmark."""
