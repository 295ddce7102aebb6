"""Taking up a saved exporter state, and taking one: the board's sums, the reader's cursors and
the chain walk's place, with the ledger rows that bear them out (the file: landed.telemetry.state).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from landed.telemetry.aggregate import Board
from landed.telemetry.board_state import board_of, state_of
from landed.telemetry.chain_reader import ChainReader
from landed.telemetry.reader import Reader
from landed.telemetry.settings import ExporterSettings
from landed.telemetry.state import STATE_VERSION, ExporterState, checkpoints, read_state, refusal

__all__ = ["resume", "shape", "snapshot"]


def shape(settings: ExporterSettings, chain: ChainReader, board: Board) -> dict[str, object]:
    """The settings that shape the figures: a state saved under others is not used."""
    return {
        "max_label_values": settings.max_label_values,
        "recent": settings.recent,
        "max_holds": board.max_holds,
        "head_keys": sorted(chain.trust) if chain.trust is not None else None,
        "foreign_after": settings.foreign_after,
    }


async def resume(
    path: Path, reader: Reader, chain: ChainReader, settings: ExporterSettings
) -> tuple[Board | None, str]:
    """(the board read on from, "") when the ledger bears the state out, with ``reader`` and
    ``chain`` moved to its places; (None, why not) else, both left at the start; (None, "")
    when there is no state yet. StateRefused (a ValueError) or a LedgerError may be raised
    before anything was moved."""
    state = read_state(path)
    if state is None:
        return None, ""
    why = await refusal(reader.scan, state, shape(settings, chain, reader.board))
    if why:
        return None, why
    board = board_of(state.board, settings.max_label_values, settings.recent)
    if state.chain is not None:
        chain.restore(state.chain)  # raises before it moves anything, or not at all
    reader.restore(state.reader)
    reader.board = board
    return board, ""


async def snapshot(
    reader: Reader, chain: ChainReader, settings: ExporterSettings, ledger: str
) -> ExporterState:
    """The state as it stands (take it where no read moves a cursor meanwhile)."""
    at, walked, board = reader.state(), chain.state(), state_of(reader.board)
    places = [("receipts", at.cursor), ("events", at.event_cursor)]
    places.append(("claims", at.claim_cursor[3]))  # SQLite: a claim's rowid is its order
    places.extend(walked.cursors.items() if walked is not None else ())
    return ExporterState(
        version=STATE_VERSION,
        ledger=ledger,
        saved_at=datetime.now(UTC),
        settings=shape(settings, chain, reader.board),
        checkpoints=await checkpoints(reader.scan, [p for p in places if p[1] > 0]),
        reader=at,
        board=board,
        chain=walked,
    )
