"""Repositories: the only modules (besides migrations) that hold SQL.

Each takes a SQLAlchemy `Connection` already inside a transaction and speaks
plain SQL with bound parameters; JSON columns are TEXT, times are ISO-8601 TEXT.
The unit of work (app/storage/unit_of_work.py) binds one of each to its transaction.
"""
