"""Where a PostgreSQL ledger lives: its URL, landed's own parameters in it (schema,
writer_role), and the URL as shown (without its secrets)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from landed.ledger.base import LedgerError

__all__ = ["redact", "split_url"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_LANDED_PARAMS = ("schema", "writer_role")


def split_url(url: str) -> tuple[str, str, str]:
    """Take landed's own query parameters (schema, writer_role) out of a PostgreSQL URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsed lazily; a bad port or host raises here, not later
    except ValueError as exc:
        raise LedgerError(
            f"the PostgreSQL ledger URL cannot be parsed ({exc}); write it as "
            "postgresql://USER@HOST:PORT/DB?schema=NAME"
        ) from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in _LANDED_PARAMS}
    rest = [(k, v) for k, v in query if k not in _LANDED_PARAMS]
    schema, role = ours.get("schema", "public"), ours.get("writer_role", "landed_writer")
    for what, name in (("schema", schema), ("writer_role", role)):
        if not _NAME.match(name):
            raise LedgerError(
                f"{what}={name!r} is not a plain SQL name; use letters, digits and _ only"
            )
    # quote, not quote_plus: libpq reads + as itself, so an encoded space must stay %20.
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), schema, role


_SECRET_PARAMS = frozenset({"password", "sslpassword"})


def redact(url: str) -> str:
    """The URL without its secrets: the password in user:password@ and in the query."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<a PostgreSQL URL that cannot be parsed>"
    if password is not None:
        parts = parts._replace(netloc=parts.netloc.replace(f":{password}@", ":***@"))
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k in _SECRET_PARAMS for k, _ in query):
        hidden = [(k, "***" if k in _SECRET_PARAMS else v) for k, v in query]
        parts = parts._replace(query=urlencode(hidden, quote_via=quote, safe="*"))
    return urlunsplit(parts)
