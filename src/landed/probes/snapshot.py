"""Before-readings on the quick path: a contract set read once before the action, kept in a file
that carries an HMAC, so ``landed verify --before`` and ``landed guard`` judge against it.

The MAC key lives outside the working tree (the user's state directory, 0600), so a snapshot
edited by hand or by an agent (an "after" pasted in as the "before") no longer verifies. It is
as strong as that key file is private: an agent running as the same user can read it, so this
catches edits and mix-ups, not a determined forger (the workflow's signed pre-read does that).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from landed.probes.contract import Contract, Observation, probe_digest
from landed.probes.expect import MEANING, label_for
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry
from landed.util import strictjson

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "Snapshot",
    "SnapshotEntry",
    "SnapshotError",
    "default_key_path",
    "find_before",
    "read_snapshot",
    "take_snapshot",
    "turn_path",
    "write_snapshot",
]

MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024
_CONCURRENCY = 4


class SnapshotError(Exception):
    """The snapshot cannot be read, does not verify, or is not a snapshot."""


class SnapshotEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    action: str
    contract: Contract
    observation: Observation


class Snapshot(BaseModel):
    """Before-readings of a contract set, judged under ``meaning``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["landed-snapshot/1"] = "landed-snapshot/1"
    meaning: int = MEANING
    taken_at: datetime
    observer: str
    entries: list[SnapshotEntry] = Field(default_factory=list)


def default_key_path() -> Path:
    """$LANDED_SNAPSHOT_KEY_FILE, else the user's state directory (never the working tree)."""
    named = os.environ.get("LANDED_SNAPSHOT_KEY_FILE")
    if named:
        return Path(named).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "landed" / "snapshot.key"


def turn_path(session_id: str, contracts: Path) -> Path:
    """Where ``landed guard`` keeps a Claude Code session's before-state of a contracts file."""
    name = hashlib.sha256(f"{session_id}\0{contracts.resolve()}".encode()).hexdigest()[:32]
    return default_key_path().parent / "turns" / f"{name}.json"


def _key(path: Path, *, create: bool) -> bytes:
    try:
        key = strictjson.read_at_most(path, 256, str(path))
    except FileNotFoundError:
        if not create:
            raise SnapshotError(
                f"no snapshot key at {path}: this snapshot was not taken on this account (or "
                "with another --key); take it again with landed snapshot"
            ) from None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = secrets.token_hex(32).encode()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key)
    except (OSError, strictjson.TooLarge) as exc:
        raise SnapshotError(f"cannot read the snapshot key {path}: {exc}") from None
    if len(key.strip()) < 32:
        raise SnapshotError(f"the snapshot key {path} is too short; delete it to make a new one")
    return key.strip()


def _mac(key: bytes, body: Any) -> str:
    canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return "hmac-sha256:" + hmac.new(key, canonical, hashlib.sha256).hexdigest()


async def take_snapshot(
    contracts: list[Contract], registry: SourceRegistry, *, observer: str
) -> Snapshot:
    """Read every contract once now (a few at a time); a read that fails is kept as the
    probe-error it is, so nothing judged against it can pass."""
    limit = asyncio.Semaphore(_CONCURRENCY)
    taken_at = datetime.now(UTC)

    async def one(contract: Contract) -> SnapshotEntry:
        async with limit:
            seen = await observe(
                contract.probe, contract.expect, registry=registry, observer=observer
            )
        return SnapshotEntry(action=contract.action, contract=contract, observation=seen)

    entries = list(await asyncio.gather(*(one(c) for c in contracts)))
    return Snapshot(taken_at=taken_at, observer=observer, entries=entries)


def write_snapshot(snapshot: Snapshot, path: Path, *, key_file: Path | None = None) -> None:
    key = _key(key_file or default_key_path(), create=True)
    body = snapshot.model_dump(mode="json")
    data = orjson.dumps({"snapshot": body, "mac": _mac(key, body)}, option=orjson.OPT_INDENT_2)
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(
            f"the snapshot holds {len(data)} bytes, more than {MAX_SNAPSHOT_BYTES}: check fewer "
            "contracts, or make their probes return less"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    temporary.write_bytes(data)
    temporary.replace(path)


def read_snapshot(path: Path, *, key_file: Path | None = None) -> Snapshot:
    """The snapshot at ``path`` once its MAC verifies; else SnapshotError saying why."""
    try:
        data = strictjson.loads(strictjson.read_at_most(path, MAX_SNAPSHOT_BYTES, str(path)))
    except FileNotFoundError:
        raise SnapshotError(
            f"no snapshot at {path}; take one before the action with landed snapshot"
        ) from None
    except strictjson.TooLarge:
        raise SnapshotError(f"{path} holds more than {MAX_SNAPSHOT_BYTES} bytes") from None
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"{path} is not a landed snapshot: {exc}") from None
    if not isinstance(data, dict) or set(data) != {"snapshot", "mac"}:
        raise SnapshotError(f"{path} is not a landed snapshot (written by landed snapshot)")
    key = _key(key_file or default_key_path(), create=False)
    if not isinstance(data["mac"], str) or not hmac.compare_digest(
        data["mac"], _mac(key, data["snapshot"])
    ):
        raise SnapshotError(
            f"the snapshot {path} does not verify against its key: it was edited after it was "
            "taken, or taken with another key; take it again before the action"
        )
    try:
        return Snapshot.model_validate(data["snapshot"])
    except ValidationError as exc:
        raise SnapshotError(f"{path} is not a snapshot this landed reads: {exc}") from None


def _same_read(a: Any, b: Any) -> bool:
    """Two probes that read the same thing: alike but for how long they may take."""
    return bool(a.model_dump(exclude={"timeout_s"}) == b.model_dump(exclude={"timeout_s"}))


def find_before(
    snapshot: Snapshot, probe: Any, expect: Any, *, exact: bool = False
) -> SnapshotEntry | None:
    """The entry read with this probe (its timeout aside, unless ``exact``) under this
    expectation, if any. The exact probe is preferred, so two entries that differ only in
    timeout pick the right one."""
    wanted = label_for(probe, expect)
    alike = [
        e
        for e in snapshot.entries
        if e.observation.expectation == wanted and _same_read(e.contract.probe, probe)
    ]
    same = [e for e in alike if e.observation.probe_sha256 == probe_digest(probe)]
    chosen = same if exact else same or alike
    return chosen[0] if chosen else None
