"""The service layer: use cases, pure transcript logic and repositories.

Nothing in this package imports Flask. Views hand in a unit of work and a clock;
services hand back plain dataclasses.
"""
