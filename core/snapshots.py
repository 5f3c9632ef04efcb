"""Reads that see one snapshot of the database and take no write lock.

SQLite is configured to take its one write lock when a transaction begins (`IMMEDIATE`, so
that concurrent writers wait for each other instead of failing on an upgrade); a reader in
such a transaction would hold that lock for as long as it reads, and every worker storing a
result would wait for it, then fail. A snapshot here begins SQLite's transaction deferred:
under WAL it only reads, and writers go on while it does. On PostgreSQL it is a read-only
repeatable read, which never blocks a writer either."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from django.db import connection, transaction


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Reads inside see the database as of the first one, and write nothing. Inside a
    transaction already, that one's snapshot holds (and its locks, which it took itself)."""
    if connection.in_atomic_block:
        yield
        return
    with ExitStack() as stack:
        if connection.vendor == "sqlite":
            connection.ensure_connection()  # (connecting sets the mode from the settings)
            # transaction_mode is the SQLite backend's own (django-stubs types the base wrapper).
            configured = connection.transaction_mode  # type: ignore[attr-defined]
            connection.transaction_mode = "DEFERRED"  # type: ignore[attr-defined]  # for this BEGIN alone
            try:
                stack.enter_context(transaction.atomic())
            finally:
                connection.transaction_mode = configured  # type: ignore[attr-defined]
        else:
            stack.enter_context(transaction.atomic())
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield
