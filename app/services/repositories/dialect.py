"""The one place where repositories look at which database they talk to."""


def placeholders(conn, count):
    """`count` positional markers in the driver's own style (`?` for SQLite, `%s` otherwise).

    Used only for hot bulk inserts sent with `exec_driver_sql`, which skips
    SQLAlchemy's per-row parameter processing.
    """
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return ", ".join([mark] * count)
