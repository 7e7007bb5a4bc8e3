"""arcengine: multi-agent GPU kernel search with a deterministic guard."""

__version__ = "0.1.0"
