"""Small utilities every layer may use: errors, text, secrets scrubbing, JSONL, paths, YAML,
interrupts, registries and plugin loading, option merging and prompt templates."""
