"""Storage: the repositories (all the SQL), the unit of work and the migration runner.

Nothing here imports Flask; every repository takes a SQLAlchemy `Connection` that is
already inside the unit of work's transaction.
"""
