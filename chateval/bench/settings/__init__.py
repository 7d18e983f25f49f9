"""Each built-in benchmark's settings model and description, in modules light enough to build its
command line from (``registry.describe``) without importing the benchmark itself."""
