"""Where a SQLite ledger lives: its URL or bare path, read into a file path and its options."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote

from landed.ledger.base import LedgerError
from landed.util.paths import user_path

__all__ = ["sqlite_path"]

_QUERY = frozenset({"synchronous"})


def sqlite_path(url: str) -> tuple[Path, dict[str, str]]:
    """``sqlite:///rel.db`` -> rel.db, ``sqlite:////abs.db`` -> /abs.db, a bare path -> itself;
    a leading ``~/`` in either is the home directory.

    A URL's path is percent-decoded (``%20`` is a space, ``%3F`` a question mark) and its query
    may hold only ``synchronous``; a bare path is taken literally, query-like text included.
    """
    query: dict[str, str] = {}
    if url.startswith("sqlite:") and not url.startswith("sqlite://"):
        raise LedgerError(
            f"SQLite ledger URL {url!r} lacks the //; use sqlite:///relative/path.db or "
            "sqlite:////absolute/path.db"
        )
    if url.startswith("sqlite://"):
        rest = url[len("sqlite://") :]
        if not rest.startswith("/"):
            raise LedgerError(
                f"SQLite ledger URL {url!r} has a host part; use sqlite:///relative/path.db "
                "or sqlite:////absolute/path.db"
            )
        rest, _, qs = rest[1:].partition("?")
        query = {k: v[-1] for k, v in parse_qs(qs, keep_blank_values=True).items()}
        unknown = sorted(set(query) - _QUERY)
        if unknown:
            raise LedgerError(
                f"SQLite ledger URL {url!r}: unknown parameter(s) {', '.join(unknown)}; the only "
                "one is synchronous=full|normal|extra"
            )
        url = unquote(rest)
    if not url or url == ":memory:":
        raise LedgerError("the ledger must be a file: pass sqlite:///PATH or a file path")
    return user_path(url), query
