"""What a user runs on a campaign or a file: eval, replay, report, export, ablate. On top of the engine."""
