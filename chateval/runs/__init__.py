"""The run directory and its control: locking, resume, atomic writes (directory), --fail-under
gates, what escalation saved, and progress display."""
