"""The problems that ship with arcengine, one folder each; installed as the package ``arcengine_problems``."""
