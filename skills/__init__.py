"""The strategy and playbook skills that ship with arcengine; installed as the package ``arcengine_skills``."""
