"""``record`` probes: one SQL statement on SQLite or PostgreSQL, in a read-only transaction."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import sqlite3
import time
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from uuid import UUID

from landed.probes.contract import RecordProbe
from landed.probes.reading import Limits, ProbeError, RawJson, Reading, exact_float, strict_json
from landed.probes.settings import SourceConfig
from landed.probes.sources import SourceRegistry
from landed.util.paths import user_path

__all__ = ["MAX_ROWS", "jsonable", "read_record"]

#: Rows a record probe reads at most; count in SQL (select count(*)) rather than fetching rows.
MAX_ROWS = 10_000


# A number a float cannot hold exactly would be judged as another number (99.99999999999999999
# as 100), and an infinity would read as text: neither may stand behind a pass.
_NOT_EXACT = (
    "the query returned the number {value}, which cannot be judged exactly (not finite, or more "
    "digits than a float holds); round it in the query, e.g. round(x, 6)"
)


def jsonable(value: Any) -> Any:
    """A database value as plain JSON: Decimal 45 is 45, timestamps are ISO text."""
    if isinstance(value, RawJson):
        try:
            return strict_json(value)
        except (ValueError, RecursionError) as exc:
            raise ProbeError(
                f"a json column holds a document that cannot be judged exactly ({exc}); "
                "select the field as text, or fix the stored document"
            ) from None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProbeError(_NOT_EXACT.format(value=value))
        return value
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        number = exact_float(value)
        if number is None:
            raise ProbeError(_NOT_EXACT.format(value=value))
        return number
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


def _rows(columns: list[str], raw: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    names: list[str] = []
    for col in columns:
        name, n = col, 2
        while name in names:  # "select 1, 1" has two columns of the same name
            name, n = f"{col}_{n}", n + 1
        names.append(name)
    return [{n: jsonable(v) for n, v in zip(names, row, strict=True)} for row in raw]


def _count_like(cell: Any) -> bool:
    """A true/false, or text that reads as a number or a yes/no ("45", "false")."""
    if isinstance(cell, bool):
        return True
    if not isinstance(cell, str):
        return False
    text = cell.strip().lower()
    if text in ("true", "false", "t", "f", "yes", "no"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _reading(probe: RecordProbe, rows: list[dict[str, Any]]) -> Reading:
    one_cell = len(rows) == 1 and len(rows[0]) == 1
    cell = next(iter(rows[0].values())) if one_cell else None
    numeric = isinstance(cell, (int, float)) and not isinstance(cell, bool)
    # A count cast to text ("0"), or "exists" as true/false, is the query's answer, not a row
    # to count: counted as one row, a false (or a "0") would read as 1. Judged as the value.
    numeric = numeric or _count_like(cell)
    reading = Reading.of_json(rows)
    if probe.measure != "rows" and one_cell and cell is None:
        reading.number = None  # select max(x) over no rows: a NULL is nothing, never a count
    elif probe.measure == "rows" or (probe.measure == "auto" and not (one_cell and numeric)):
        reading.number = len(rows)
    elif one_cell:
        reading.number = cell
        reading.auto_cell = probe.measure == "auto"
    else:
        reading.failed_claims.append(
            f"measure 'value' needs a one-row, one-column result; the query returned "
            f"{len(rows)} row(s) of {len(rows[0]) if rows else 0} column(s)"
        )
    reading.value = cell if one_cell else rows
    return reading


def _sqlite_path(cfg: SourceConfig) -> Path:
    if cfg.url:
        parts = urlsplit(cfg.url)
        if parts.scheme.lower() != "sqlite":
            raise ProbeError(f"unsupported database URL scheme {parts.scheme!r}")
        # sqlite:///relative.db and sqlite:////absolute.db, as most tools write them; ~/ is
        # the home directory, as for the ledger's URL.
        return user_path(cfg.url.split(":///", 1)[1] if ":///" in cfg.url else parts.path)
    assert cfg.path is not None
    return Path(cfg.path)  # ~/ already expanded by SourceConfig


# A probe's transaction still open (or failed) after its statement: rolled back by text.
_IN_TRANSACTION = frozenset({"INTRANS", "INERROR"})

# Pragmas that only describe the database, and of those the ones whose argument names what to
# describe (not a value to set). Any other pragma is refused: some set state for the whole
# verifier process (soft_heap_limit, temp_store_directory), not just this connection.
_PRAGMAS_WITH_SUBJECT = frozenset(
    {
        "foreign_key_check",
        "foreign_key_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "quick_check",
        "table_info",
        "table_list",
        "table_xinfo",
    }
)
_READ_PRAGMAS = _PRAGMAS_WITH_SUBJECT | {
    "application_id",
    "collation_list",
    "compile_options",
    "data_version",
    "database_list",
    "encoding",
    "freelist_count",
    "function_list",
    "module_list",
    "page_count",
    "page_size",
    "pragma_list",
    "schema_version",
    "user_version",
}


class _ReadOnlyAuthorizer:
    """Refuses, while the statement is prepared, what a read-only connection still allows:
    ATTACH (which VACUUM INTO also uses) creates files wherever the verifier may write and reads
    any other SQLite file it can open, signed as this source's reading; and pragmas that set
    state. The refusal is remembered so the probe error can say what was refused."""

    def __init__(self) -> None:
        self.refused: str | None = None

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _by: str | None
    ) -> int:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            self.refused = "ATTACH, DETACH and VACUUM INTO (they open or create other files)"
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name not in _READ_PRAGMAS or (
                arg2 is not None and name not in _PRAGMAS_WITH_SUBJECT
            ):
                self.refused = f"PRAGMA {name} (only pragmas that describe the database are read)"
                return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK


class _Budget:
    """Bytes of result a probe may hold: rows are counted as they arrive, so a huge cell or a
    wide result is refused before it is copied into hex, JSON and evidence (several times)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, row: tuple[Any, ...]) -> None:
        for value in row:
            if isinstance(value, (bytes, bytearray, memoryview, str)):
                self.used += len(value)
            elif isinstance(value, (dict, list, tuple)):
                # json/jsonb and array cells arrive parsed: their size is their JSON text's.
                self.used += len(json.dumps(value, default=str, ensure_ascii=False))
            else:
                self.used += 16
        if self.used > self.limit:
            raise ProbeError(
                f"the query returned more than {self.limit} bytes; select only the columns "
                "the expectation needs, or count or hash them in SQL"
            )


def _sqlite_read(
    path: Path, query: str, params: Any, deadline: float, limit: int
) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ProbeError(f"the SQLite file {path} does not exist")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    authorizer = _ReadOnlyAuthorizer()
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=max(0.0, deadline - time.monotonic()))
    except sqlite3.Error as exc:
        raise ProbeError(f"could not open {path} read-only: {exc}") from None
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.set_authorizer(authorizer)
        # Checked every few thousand VM steps: a runaway query is interrupted at the deadline.
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 5_000)
        cur = conn.execute(query, params)
        budget, raw = _Budget(limit), []
        for row in cur:
            budget.take(row)
            raw.append(row)
            if len(raw) > MAX_ROWS:
                break
        columns = [d[0] for d in cur.description or ()]
    except sqlite3.Error as exc:
        if time.monotonic() > deadline:
            raise ProbeError(
                "the query did not finish before the timeout; it was interrupted"
            ) from None
        if authorizer.refused is not None:
            raise ProbeError(
                f"the query was refused: a record probe on SQLite may not use "
                f"{authorizer.refused}; read the source's own tables with one SELECT"
            ) from None
        raise ProbeError(f"the query failed: {exc}") from None
    finally:
        conn.close()
    if len(raw) > MAX_ROWS:
        raise ProbeError(f"the query returned more than {MAX_ROWS} rows; count them in SQL instead")
    return _rows(columns, raw)


async def _postgres_read(
    name: str, cfg: SourceConfig, probe: RecordProbe, registry: SourceRegistry, limits: Limits
) -> list[dict[str, Any]]:
    from psycopg_pool import PoolTimeout

    try:
        async with asyncio.timeout(limits.timeout_s):
            return await _postgres_rows(name, cfg, probe, registry, limits)
    except (TimeoutError, PoolTimeout) as exc:
        refused = registry.pg_refusal(name)
        if refused is not None:
            raise ProbeError(refused) from None
        if isinstance(exc, PoolTimeout):
            raise ProbeError(
                f"no connection to source {name!r} within {limits.timeout_s}s: the pool could "
                "not connect (the verifier's log says why), or every connection was busy"
            ) from None
        raise ProbeError(
            f"the query did not finish within {limits.timeout_s}s; it was cancelled"
        ) from None


async def _postgres_rows(
    name: str, cfg: SourceConfig, probe: RecordProbe, registry: SourceRegistry, limits: Limits
) -> list[dict[str, Any]]:
    import psycopg

    pool = await registry.pg_pool(name, cfg, limits.timeout_s)
    async with pool.connection(timeout=limits.timeout_s) as conn:
        refused = registry.pg_refusal(name)
        if refused is not None:
            # A new connection was refused since this one was made (a power granted to the
            # role meanwhile): the connections made before are refused too.
            raise ProbeError(refused)
        try:
            # stream() sends one statement through the extended protocol: "select 1; delete
            # ..." is refused by the server, and rows arrive one by one, so a huge result
            # is cut at MAX_ROWS without being held in memory.
            cur = conn.cursor()
            raw: list[tuple[Any, ...]] = []
            budget = _Budget(limits.read_cap)
            async for row in cur.stream(probe.query, probe.params or None):
                budget.take(row)
                raw.append(row)
                if len(raw) > MAX_ROWS:
                    break
            columns = [d.name for d in cur.description or ()]
        except psycopg.Error as exc:
            raise ProbeError(f"the query failed: {exc}".strip()) from None
        finally:
            # Session advisory locks outlive the rollback: a probe's pg_advisory_lock() would
            # stay held on the pooled connection, blocking the application that uses that key.
            if conn.info.transaction_status.name in _IN_TRANSACTION:
                # One round trip: with no parameters the statements go as one simple query.
                await conn.execute("rollback; select pg_advisory_unlock_all()")
            else:
                await conn.rollback()
                await conn.set_autocommit(True)
                try:
                    await conn.execute("select pg_advisory_unlock_all()")
                finally:
                    await conn.set_autocommit(False)
    if len(raw) > MAX_ROWS:
        raise ProbeError(f"the query returned more than {MAX_ROWS} rows; count them in SQL instead")
    return _rows(columns, raw)


async def read_record(
    probe: RecordProbe, cfg: SourceConfig, registry: SourceRegistry, limits: Limits
) -> Reading:
    scheme = urlsplit(cfg.url).scheme.lower() if cfg.url else "sqlite"
    if scheme == "sqlite":
        deadline = time.monotonic() + limits.timeout_s
        params = probe.params if probe.params else ()
        rows = await asyncio.to_thread(
            _sqlite_read, _sqlite_path(cfg), probe.query, params, deadline, limits.read_cap
        )
    elif scheme in ("postgres", "postgresql"):
        rows = await _postgres_read(probe.source, cfg, probe, registry, limits)
    else:
        raise ProbeError(
            f"source {probe.source!r} has URL scheme {scheme!r}; record probes read "
            "postgresql:// and sqlite:/// sources"
        )
    return _reading(probe, rows)
