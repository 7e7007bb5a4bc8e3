"""The guard as the engine sees it: the gate over a candidate's source, the sandbox that runs a child per
candidate, device turns, the decision rules and the service the campaign submits to. What runs inside the child
process is arcengine.guard.child, which imports nothing else of arcengine."""
