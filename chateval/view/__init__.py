"""The run viewer: one self-contained HTML page for one or more run directories."""

from .build import NotARunDir, build_view
from .load import RunView, SampleView, load_run

__all__ = ["NotARunDir", "RunView", "SampleView", "build_view", "load_run"]
