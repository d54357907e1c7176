"""evcli: incident diagnosis whose every fact cites a recorded tool output."""

__version__ = "0.1.0"
