"""What a run leaves behind: the event bus, the append-only log, the SQLite store and the files, each written by a
helper process of its own; secret redaction and log configuration. Imports the domain only."""
