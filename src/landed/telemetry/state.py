"""The exporter's saved state: its sums and cursors in a JSON file, so that a restart reads on
from where the last run stopped instead of reading the whole ledger again.

The file is data only (JSON, read bounded and checked field by field; nothing in it can run).
It is used only if the ledger bears it out: the same state format, the same settings that shape
the figures, and, for every place it names (the first receipt, the row at each cursor), the
row the ledger holds there now carries the chain link the saved state recorded. Anything else
(another ledger, one cut back or rewritten, a corrupt, truncated or oversized file) is a reason,
logged, and the exporter reads the ledger from its start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from landed.ledger.base import DEFAULT_LEDGER_PATH
from landed.ledger.factory import file_of
from landed.ledger.scan import LedgerScan, shown
from landed.telemetry.board_state import BoardState
from landed.telemetry.chain_reader import ChainState
from landed.telemetry.reader import ReaderState
from landed.util.strictjson import TooLarge, read_at_most

__all__ = [
    "MAX_STATE_BYTES",
    "STATE_VERSION",
    "Checkpoint",
    "ExporterState",
    "StateRefused",
    "default_state_path",
    "read_state",
    "write_state",
]

#: Bumped whenever what the file holds, or what the figures mean, changes.
STATE_VERSION = 1
#: Label caps bound the sums, and the walks keep at most MAX_RECENT links per chain (about 17
#: MB each); a state file larger than this is not one of ours.
MAX_STATE_BYTES = 256 * 1024 * 1024


class StateRefused(ValueError):
    """Why a saved state is not used (the exporter then reads the ledger from its start)."""


class Checkpoint(BaseModel):
    """The row a chain holds first past ``after``: its order and chain link, as saved."""

    model_config = ConfigDict(extra="forbid", strict=True)

    chain: str
    after: int
    order: int
    link: str | None


class ExporterState(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: int
    ledger: str
    saved_at: datetime
    settings: dict[str, object]
    checkpoints: list[Checkpoint]
    reader: ReaderState
    board: BoardState
    chain: ChainState | None


def default_state_path(ledger_url: str) -> Path:
    """Beside a SQLite ledger's file; under .landed/ (one file per ledger URL) otherwise."""
    path = file_of(ledger_url)
    if path is not None:
        return path.with_name(path.name + ".exporter-state.json")
    digest = hashlib.sha256(shown(ledger_url).encode()).hexdigest()[:12]
    return DEFAULT_LEDGER_PATH.parent / f"exporter-state-{digest}.json"


def read_state(path: Path) -> ExporterState | None:
    """The saved state (None: no file yet); StateRefused names what is wrong with it."""
    try:
        raw = read_at_most(path, MAX_STATE_BYTES, f"the state file {path}")
    except FileNotFoundError:
        return None
    except TooLarge:
        raise StateRefused(
            f"it is longer than {MAX_STATE_BYTES:,} bytes, no state of ours"
        ) from None
    except OSError as exc:
        raise StateRefused(f"it cannot be read: {exc}") from None
    try:
        version = orjson.loads(raw).get("version")
    except (orjson.JSONDecodeError, AttributeError):
        raise StateRefused("it is not a JSON object (corrupt or cut short)") from None
    if version != STATE_VERSION:
        raise StateRefused(f"it is of state format {version!r}, this landed writes {STATE_VERSION}")
    try:
        return ExporterState.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise StateRefused(
            f"it does not hold an exporter state: {first['msg']} at {where}"
        ) from None


def write_state(path: Path, state: ExporterState) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one."""
    body = state.model_dump_json().encode()
    if len(body) > MAX_STATE_BYTES:  # it would be refused at the next start
        raise StateRefused(f"the state is {len(body):,} bytes, more than {MAX_STATE_BYTES:,}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


async def checkpoints(scan: LedgerScan, places: list[tuple[str, int]]) -> list[Checkpoint]:
    """The first receipt, and the row at each (chain, order) place, as the ledger holds them."""
    out = []
    for chain, order in [("receipts", 0), *places]:
        after = order - 1 if order > 0 else 0
        rows = await scan.chain(chain, after, 1)
        if order == 0 and not rows:
            continue  # an empty ledger: nothing counted, nothing to bear out
        if order > 0 and (not rows or int(rows[0][0]) != order):
            raise StateRefused(f"the {chain} chain holds no row at {order}")
        out.append(Checkpoint(chain=chain, after=after, order=int(rows[0][0]), link=rows[0][2]))
    return out


async def refusal(scan: LedgerScan, state: ExporterState, settings: dict[str, object]) -> str:
    """Why ``state`` is not this ledger's and these settings' ("": it is)."""
    if state.settings != settings:
        changed = sorted(
            k for k in {*settings, *state.settings} if settings.get(k) != state.settings.get(k)
        )
        return f"the settings that shape the figures changed ({', '.join(changed)})"
    for cp in state.checkpoints:
        rows = await scan.chain(cp.chain, cp.after, 1)
        row = rows[0] if rows else None
        if row is None or int(row[0]) != cp.order or row[2] != cp.link or row[3] != row[4]:
            return (
                f"the ledger does not hold the {cp.chain} row at {cp.order} it counted: another "
                "ledger, or one cut back or rewritten since"
            )
    # PostgreSQL: a claims cursor names the table's file; a restored or other table refuses.
    await scan.claims(state.reader.claim_cursor, datetime.min.replace(tzinfo=UTC), 1)
    return ""
