"""Head-to-head (``chateval bench head2head``): two or more memory systems answer the same
LongMemEval or LoCoMo questions and the debate panel judges each pair in both orders. See README.md.

Imports nothing: ``settings`` is read by ``--help`` without loading the benchmark."""
