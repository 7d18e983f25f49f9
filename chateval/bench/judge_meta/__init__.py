"""Judge meta-evaluation (``chateval bench faireval``, ``chateval bench topical-chat``): how well
the judges (single vs the debate panel, and sweeps of the panel) agree with human labels. See
README.md.

Imports nothing: the ``*_settings`` modules are read by ``--help`` without loading a benchmark."""
