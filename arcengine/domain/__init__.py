"""The vocabulary every layer shares: events, problems, skills, tunables, usage, errors, foreign formats.
Imports nothing of arcengine but itself and the guard child's constants (arcengine.guard.child, a leaf)."""
