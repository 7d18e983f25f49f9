"""LongMemEval (``chateval bench longmemeval``): QA accuracy per question type and retrieval
recall/NDCG of memory systems on the S, M or oracle file. See README.md.

Imports nothing: ``settings`` is read by ``--help`` without loading the benchmark."""
