"""Named sources: the verifier's own connections and credentials, never carried by a probe."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from landed.probes.reading import ProbeError, RawJson
from landed.probes.settings import (
    ConfigError,
    LandedSettings,
    SourceConfig,
    SourceKind,
    canonical_name,
    config_key,
    default_observer,
    settings_problems,
)
from landed.util.redact import Redactor

if TYPE_CHECKING:
    import aiohttp
    from psycopg_pool import AsyncConnectionPool

__all__ = ["SourceRegistry", "load_registry"]


_UNSOURCED_CONNECTIONS = 16


def _http_session(connections: int, cfg: SourceConfig | None) -> aiohttp.ClientSession:
    """One kept-alive connection pool for a source, at most ``connections`` sockets."""
    import aiohttp

    connector = aiohttp.TCPConnector(
        limit=connections,
        limit_per_host=0,
        ssl=cfg is None or cfg.verify_tls,
    )
    return aiohttp.ClientSession(
        connector=connector,
        # Each probe's own deadline bounds it (asyncio.timeout in the probe), so the session
        # adds no timers of its own.
        timeout=aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None),
        cookie_jar=aiohttp.DummyCookieJar(),  # one probe's cookies never ride along on the next
        trust_env=False,  # a proxy from the environment would sit between us and the source
        raise_for_status=False,
        # Decoded by the probe, which checks that a compressed body reached its end: a gzip
        # body cut short would otherwise read as a whole, shorter page (aiohttp does not check).
        auto_decompress=False,
        headers={"Accept-Encoding": "gzip, deflate"},
    )


# What the role a source logs in as may do on the database server beyond reading rows (the login
# role: a role set for the session, `options=-c role=...`, can be reset to it by a probe). A
# read-only transaction does not stop it: COPY ... TO PROGRAM runs a shell command there and
# pg_read_file() puts a server file into signed evidence, from a probe the agent wrote.
_SERVER_POWERS = """
select r.rolname,
    r.rolsuper or exists (
        -- a member of a superuser role can SET ROLE to it within one statement
        select 1 from pg_roles s where s.rolsuper and pg_has_role(session_user, s.oid, 'MEMBER')
    ),
    coalesce(pg_has_role(session_user, to_regrole('pg_execute_server_program'), 'MEMBER'), false),
    coalesce(pg_has_role(session_user, to_regrole('pg_read_server_files'), 'MEMBER'), false),
    coalesce(pg_has_role(session_user, to_regrole('pg_write_server_files'), 'MEMBER'), false)
from pg_roles r where r.rolname = session_user
"""


async def _refuse_server_powers(name: str, conn: Any) -> None:
    """Refuse a source whose role can run programs or touch files on the database server."""
    import psycopg

    try:
        cur = await conn.execute(_SERVER_POWERS)
        row = await cur.fetchone()
        await conn.rollback()
    except psycopg.Error as exc:
        raise ProbeError(
            f"could not check what source {name!r}'s role may do on the server: {exc}"
        ) from None
    if row is None:
        raise ProbeError(f"source {name!r}: the connection's role is not in pg_roles")
    role, superuser, program, read_files, write_files = row
    powers = [
        what
        for what, has in (
            ("is (or may become) a superuser", superuser),
            ("may run programs (pg_execute_server_program)", program),
            ("may read server files (pg_read_server_files)", read_files),
            ("may write server files (pg_write_server_files)", write_files),
        )
        if has
    ]
    if powers:
        raise ProbeError(
            f"source {name!r} connects as role {role!r}, which {' and '.join(powers)}: a "
            "probe's SQL could then run commands or read files on the database server, and a "
            "read-only transaction does not stop it. Connect as a role that may only read the "
            f"tables the probes check, e.g. CREATE ROLE landed_reader LOGIN; GRANT SELECT ON "
            "<tables> TO landed_reader"
        )


class SourceRegistry:
    """Resolves source names to configuration and holds one pool or client per source.

    Construct from a mapping (tests, embedding) or with :meth:`from_settings` (environment and
    ``landed.toml``). Use ``async with`` or call :meth:`aclose` to release pools and clients.
    """

    def __init__(
        self,
        sources: Mapping[str, SourceConfig | Mapping[str, Any]] | None = None,
        *,
        allow_unsourced: bool = False,
        observer: str | None = None,
        extra_secrets: Iterable[str] = (),
    ) -> None:
        self._sources: dict[str, tuple[str, SourceConfig]] = {}
        for name, cfg in (sources or {}).items():
            model = cfg if isinstance(cfg, SourceConfig) else SourceConfig.model_validate(cfg)
            self._sources[canonical_name(name)] = (name, model)
        self.allow_unsourced = allow_unsourced
        # True where the probes come from tasks (the verifier worker): a command's cwd is then
        # entered without following any symlink. The CLI runs the user's own probes.
        self.task_probes = False
        self.observer = observer or default_observer()
        secrets = [s for _, cfg in self._sources.values() for s in cfg.secrets()]
        self.redactor = Redactor([*secrets, *extra_secrets])
        self._pg_pools: dict[str, AsyncConnectionPool[Any]] = {}
        # Why a source's pool refused its last new connection (its role's server powers).
        self._pg_refusals: dict[str, str] = {}
        self._pool_lock = asyncio.Lock()
        self._http: dict[str, aiohttp.ClientSession] = {}

    @classmethod
    def from_settings(
        cls,
        settings: LandedSettings | None = None,
        *,
        config_file: str | None = None,
        allow_unsourced: bool | None = None,
    ) -> SourceRegistry:
        """``allow_unsourced`` overrides the setting (None: use it)."""
        if settings is None:
            settings = LandedSettings(config_file=config_file) if config_file else LandedSettings()
        allow = settings.allow_unsourced if allow_unsourced is None else allow_unsourced
        return cls(settings.sources, allow_unsourced=allow, observer=settings.observer)

    def names(self) -> list[str]:
        return sorted(name for name, _ in self._sources.values())

    def get(self, name: str) -> SourceConfig:
        """The configuration of ``name``; an unknown name says which config key to add."""
        entry = self._sources.get(canonical_name(name))
        if entry is None:
            known = ", ".join(self.names()) or "none"
            raise ProbeError(
                f"no source named {name!r} in the verifier's configuration (configured: {known}); "
                f"add it with {config_key(name)}URL=... (and {config_key(name)}KIND=...) or a "
                f"[sources.{name}] table in landed.toml"
            )
        return entry[1]

    def resolve(
        self, name: str | None, probe_kind: str, kinds: tuple[SourceKind, ...]
    ) -> SourceConfig | None:
        """The source a probe names, checked against the kinds that probe can read."""
        if name is None:
            if not self.allow_unsourced:
                raise ProbeError(
                    f"this {probe_kind} probe names no source, and this verifier only reads "
                    "configured sources (allow_unsourced is false); name a source"
                )
            return None
        cfg = self.get(name)
        if cfg.kind not in kinds:
            raise ProbeError(
                f"source {name!r} is a {cfg.kind} source; a {probe_kind} probe needs one of "
                f"kind {' or '.join(kinds)}"
            )
        return cfg

    # --- shared connections ------------------------------------------------------------------

    def pg_refusal(self, name: str) -> str | None:
        """Why the pool of source ``name`` last refused a new connection, if it did."""
        return self._pg_refusals.get(canonical_name(name))

    async def pg_pool(
        self, name: str, cfg: SourceConfig, timeout: float
    ) -> AsyncConnectionPool[Any]:
        """One PostgreSQL pool per source; every connection runs read-only transactions."""
        key = canonical_name(name)
        pool = self._pg_pools.get(key)
        if pool is not None:
            return pool
        async with self._pool_lock:
            pool = self._pg_pools.get(key)
            if pool is None:
                pool = await self._open_pool(name, key, cfg, timeout)
                self._pg_pools[key] = pool
            return pool

    async def _open_pool(
        self, name: str, key: str, cfg: SourceConfig, timeout: float
    ) -> AsyncConnectionPool[Any]:
        import psycopg
        from psycopg.types.json import set_json_loads
        from psycopg_pool import AsyncConnectionPool

        assert cfg.url is not None
        statement_ms = int(cfg.max_timeout_s * 1000)

        async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
            # Every new connection, not only the first: a role granted more since is refused
            # from its next connection on (the pool replaces each within max_lifetime).
            try:
                await _refuse_server_powers(name, conn)
            except ProbeError as exc:
                # The pool only retries and times out; the probe that waited says why.
                self._pg_refusals[key] = str(exc)
                raise
            self._pg_refusals.pop(key, None)
            # A server-side ceiling as well as the client's timeout: a cancelled client
            # must not leave a query running on the system of record.
            await conn.execute(
                "select set_config('statement_timeout', %s, false)", [str(statement_ms)]
            )
            await conn.commit()
            await conn.set_read_only(True)
            # json and jsonb cells arrive as text, parsed strictly where they are judged.
            set_json_loads(RawJson.load, conn)

        # Connect once directly first: a pool hides why it could not connect.
        try:
            probe_conn = await psycopg.AsyncConnection.connect(
                cfg.url, connect_timeout=max(1, int(timeout))
            )
        except psycopg.Error as exc:
            raise ProbeError(f"could not connect to source {name!r}: {exc}") from None
        try:
            await _refuse_server_powers(name, probe_conn)
        finally:
            await probe_conn.close()
        pool = AsyncConnectionPool(
            cfg.url,
            min_size=1,
            max_size=cfg.pool_size,
            open=False,
            configure=configure,
            name=f"landed-{key}",
            timeout=timeout,
        )
        await pool.open(wait=True, timeout=timeout)
        return pool

    def http_session(self, name: str | None, cfg: SourceConfig | None) -> aiohttp.ClientSession:
        """The source's kept-alive HTTP session: one connection pool of ``pool_size`` sockets
        (16 for unsourced absolute URLs), shared by every probe of that source. A probe waits
        for a free connection inside its own deadline, which bounds the concurrency per source.
        Call from the event loop that will use it."""
        key = canonical_name(name) if name else ""
        session = self._http.get(key)
        if session is None or session.closed:
            session = self._http[key] = _http_session(
                cfg.pool_size if cfg else _UNSOURCED_CONNECTIONS, cfg
            )
        return session

    async def aclose(self) -> None:
        pools, self._pg_pools = list(self._pg_pools.values()), {}
        sessions, self._http = list(self._http.values()), {}
        for pool in pools:
            await pool.close()
        for session in sessions:
            await session.close()

    async def __aenter__(self) -> SourceRegistry:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def load_registry(
    *,
    config_file: str | None = None,
    role: str = "landed",
    extra_secrets: Iterable[str] = (),
    allow_unsourced: bool | None = None,
) -> SourceRegistry:
    """A registry from the environment and ``landed.toml``; a bad configuration becomes a
    ConfigError whose message carries field names only, never the values (they may be secrets).

    ``allow_unsourced`` overrides the setting: the CLI's own commands pass True because the
    person running them is the one who configures (their own authority)."""
    try:
        settings = LandedSettings(config_file=config_file) if config_file else LandedSettings()
    except ValidationError as exc:
        raise ConfigError(
            f"the verifier configuration is invalid: {settings_problems(exc)}"
        ) from None
    except (ValueError, OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"the verifier configuration could not be read: {exc}") from None
    return SourceRegistry(
        settings.sources,
        allow_unsourced=settings.allow_unsourced if allow_unsourced is None else allow_unsourced,
        observer=settings.observer or default_observer(role),
        extra_secrets=extra_secrets,
    )
