"""``landed doctor``'s source check: the verifier's configuration loads (LANDED_SOURCES__*,
landed.toml) and every source it names resolves: a SQLite file or a folder exists, a
PostgreSQL server accepts a connection, an HTTP host name resolves. Relative paths are taken
from the current directory, as a verifier started here would."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from landed.cli.doctor_check import Check, bounded

if TYPE_CHECKING:
    from landed.probes.settings import SourceConfig
    from landed.probes.sources import SourceRegistry

__all__ = ["sources_check"]


def _sqlite_file(cfg: SourceConfig) -> Path:
    from landed.util.paths import user_path

    if cfg.url:
        return user_path(
            cfg.url.split(":///", 1)[1] if ":///" in cfg.url else urlsplit(cfg.url).path
        )
    return Path(cfg.path or "")


async def _postgres(url: str, timeout: float) -> None:
    import psycopg

    conn = await bounded(psycopg.AsyncConnection.connect(url), timeout, "the database")
    await conn.close()


async def _resolve(cfg: SourceConfig, timeout: float) -> str | None:
    """None when the source resolves, else what is wrong."""
    url = cfg.url or ""
    if cfg.kind == "sql" and url.startswith(("postgresql://", "postgres://")):
        await _postgres(url, timeout)
        return None
    if cfg.kind == "sql":
        path = _sqlite_file(cfg)
        return None if path.is_file() else f"no SQLite file at {path.resolve()}"
    if cfg.kind == "http":
        host = urlsplit(url).hostname
        if not host:
            return f"{url!r} names no host"
        loop = asyncio.get_running_loop()
        await bounded(loop.getaddrinfo(host, None), timeout, f"the name {host}")
        return None
    if cfg.path and not Path(cfg.path).exists():
        return f"no {cfg.kind} path {Path(cfg.path).resolve()}"
    return None


async def _problems(registry: SourceRegistry, timeout: float) -> list[str]:
    from landed.probes.settings import config_key

    found: list[str] = []
    for name in registry.names():
        try:
            why = await _resolve(registry.get(name), timeout)
        except Exception as exc:  # refused, timed out, unresolvable: the source is not there
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if why is not None:
            found.append(f"{name}: {registry.redactor(why)} (set by {config_key(name)}*)")
    return found


async def sources_check(timeout: float) -> Check:
    """Every source the verifier's settings name resolves."""
    from landed.probes.settings import ConfigError
    from landed.probes.sources import load_registry

    name = "sources"
    try:
        registry = load_registry(role="verifier", allow_unsourced=False)
    except ConfigError as exc:
        fix = "fix LANDED_SOURCES__* or landed.toml (LANDED_CONFIG_FILE) as named above"
        return Check.problem(name, str(exc), fix)
    names = registry.names()
    if not names:
        return Check.problem(
            name,
            "the verifier has no named source: no task's proof plan can be read back",
            "name one: LANDED_SOURCES__<NAME>__URL=... (or a [sources.NAME] table in landed.toml)",
        )
    problems = await _problems(registry, timeout)
    if problems:
        fix = "fix each source's URL or path (or start its server); the verifier reads them"
        return Check.problem(name, "; ".join(problems), fix)
    return Check.passed(name, f"{len(names)} resolve: {', '.join(names)}")
