"""`chateval evaluate` as a library: the config, input loading, the Evaluator facade, the
summary and the report."""
