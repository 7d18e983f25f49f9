"""TeaFarm (``chateval bench teafarm``, from THEANINE): counterfactual questions about the past
asked in a new session; success = the system is not fooled. See README.md.

Imports nothing: ``settings`` is read by ``--help`` without loading the benchmark."""
