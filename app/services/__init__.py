"""The use cases: open, read, follow and search sessions, ingest output, tokens and access.

Nothing in this package imports Flask. Views hand in a unit of work and a clock;
services hand back plain dataclasses. The pure turn logic lives in app/transcript,
parsing in app/providers, output shapes in app/formats and the SQL in app/storage.
"""
