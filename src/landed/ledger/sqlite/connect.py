"""Opening a SQLite ledger file: a writer creates and migrates it, a reader leaves it exactly as
it was; and what each SQLite failure tells its user to do."""

from __future__ import annotations

import sqlite3
from hashlib import sha256
from pathlib import Path
from urllib.parse import quote

from landed.ledger.base import LedgerError, LedgerNotFound
from landed.ledger.sqlite.schema import SCHEMA_VERSION, migrate, schema_version

__all__ = ["connect", "failure", "prepare", "schema_at"]


def _sha256_hex(body: bytes) -> str:
    return sha256(body).hexdigest()


def failure(path: Path, exc: sqlite3.Error) -> LedgerError:
    """The ledger's error for a failed statement, naming the fix."""
    if isinstance(exc, sqlite3.DatabaseError) and "malformed" in str(exc):
        fix = (
            "the file is damaged: copy it aside before anything else writes to it, and "
            "recover its rows with sqlite3's .recover"
        )
    elif "locked" in str(exc) or "busy" in str(exc):
        fix = "another process held the ledger's lock past the 10 s busy timeout; try again"
    else:
        fix = "check the file, its directory and the disk"
    return LedgerError(f"the ledger file {path} failed: {type(exc).__name__}: {exc}; {fix}")


def connect(path: Path, create: bool) -> sqlite3.Connection:
    """A connection for the ledger thread (the caller closes it); read-only unless ``create``."""
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            return sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        # Read-only: a file that is not a ledger (or not yet) is left exactly as it was.
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise LedgerError(f"cannot open the ledger file {path}: {exc}") from exc


def prepare(conn: sqlite3.Connection, path: Path, create: bool, synchronous: str) -> None:
    """Check (and as a writer, migrate) what the file holds."""
    # The verify walk's body hash, computed as SQLite reads each row (see ChainRow).
    conn.create_function("landed_sha256", 1, _sha256_hex, deterministic=True)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        version = schema_version(conn)
        if not create:
            if version < 1:
                raise LedgerNotFound(
                    f"{path} is not a landed ledger (schema version {version}); "
                    "create it with `landed ledger init --ledger URL` (a runner creates "
                    "its own)"
                )
            return  # an older schema reads the same; only a writer migrates it
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"{path} is at ledger schema version {version}, newer than this "
                f"landed's {SCHEMA_VERSION}: a runner of older code would skip what the "
                "newer schema records (claims before each act); upgrade landed here, and "
                "stop every older runner before newer ones start"
            )
        if version < 1:
            _refuse_foreign(conn, path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        if version < SCHEMA_VERSION:
            migrate(conn)
    except sqlite3.DatabaseError as exc:
        hint = (
            "; reading a WAL ledger needs write access to its directory (SQLite keeps a "
            "-shm file beside it): run as the ledger's owner or open the directory to them"
            if "readonly" in str(exc)
            else ""
        )
        raise LedgerError(f"{path} is not a usable landed ledger: {exc}{hint}") from exc


def _refuse_foreign(conn: sqlite3.Connection, path: Path) -> None:
    """A database holding other tables is someone else's: the ledger gets its own file."""
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT LIKE 'landed_%' ORDER BY name"
        )
    ]
    if names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise LedgerError(
            f"{path} is another database (tables: {shown}), not a landed ledger; "
            "give the ledger a file of its own, e.g. --ledger sqlite:///.landed/ledger.db"
        )


def schema_at(url: str) -> tuple[int, int, str]:
    """The schema version the file at ``url`` holds (0: no schema), this landed's, and where
    it is; read-only, nothing is created."""
    path = Path(url.removeprefix("sqlite:///"))
    if not path.exists():
        return 0, SCHEMA_VERSION, str(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return schema_version(conn), SCHEMA_VERSION, str(path)
