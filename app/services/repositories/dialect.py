"""The one place where repositories look at which database they talk to."""


def mark(conn):
    """The driver's positional parameter marker: `?` for SQLite, `%s` otherwise."""
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


def placeholders(conn, count):
    """`count` positional markers in the driver's own style (`?` for SQLite, `%s` otherwise).

    Used only on hot paths that go straight to the driver, skipping SQLAlchemy's
    per-row processing: the bulk buffer insert and the replay read.
    """
    return ", ".join([mark(conn)] * count)
