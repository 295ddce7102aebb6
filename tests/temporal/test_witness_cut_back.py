"""A ledger cut back to an earlier state: the SQLite file copied after two tasks, two more tasks
run, the copy restored. Rows and signed heads go back together, so the plain `ledger verify`
finds nothing; the witness (the runner's heads, kept in Temporal) shows the cut-back, and the
exporter's head position goes down."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from helpers.exporter import Place, exporter_on, samples
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task

from landed.ledger.factory import read_heads
from landed.ledger.witness import WitnessState, witness_id
from landed.signing import KeyPair
from landed.temporal.plugin import connect
from landed.temporal.witness import read_witness


def landed(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("landed")
    return subprocess.run(
        [str(exe), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def _copy(source: Path, target: Path) -> None:
    """A consistent copy of a live SQLite file (its WAL included), as a backup takes one."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


async def _witnessed(address: str, key_id: str, pos: int) -> WitnessState:
    client = await connect(identity="test-witness-reader", address=address)
    for _ in range(200):
        state = await read_witness(client, witness_id(key_id))
        if state is not None and state.heads and state.heads[-1].pos >= pos:
            return state
        await asyncio.sleep(0.1)
    raise AssertionError(f"the witness holds no head at position {pos} within 20 s")


async def _positions(place: Place, trust: Path) -> tuple[float, float]:
    exporter = exporter_on(place, head_keys=[trust])
    try:
        found = samples((await exporter.scrape()).decode())
    finally:
        await exporter.stop()
    return (
        found[("landed_ledger_head_position", ())],
        found[("landed_ledger_last_signed_position", ())],
    )


async def test_a_cut_back_ledger_is_caught_by_the_witness_not_by_its_own_heads(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    saved = tmp_path / "saved.db"
    async with rows_roles(temporal_dev, tmp_path, db, head_every=1) as roles:
        for i in range(4):
            task = rows_task(f"cut-back-{i}", db, expect=1, batch=f"cb{i}", write=1)
            assert (await roles.client.run(task)).verdict == "verified"
            if i == 1:
                path = Path(roles.ledger_url.removeprefix("sqlite:///"))
                _copy(path, saved)
        url, head_public = roles.ledger_url, roles.head_public_key
        key_id = KeyPair.load(head_public.with_suffix(".key")).key_id
        late, _ = await read_heads(url, 1)
        # The runner's worker applies what it is sent (a head signalled as it stops waits
        # for the next runner).
        await _witnessed(temporal_dev, key_id, late)
    early, _ = await read_heads(f"sqlite:///{saved}", 1)
    assert 0 < early < late
    place = Place(url, "sqlite", path)
    assert await _positions(place, head_public) == (late, late)

    # The owner of the file puts the earlier copy back: rows and heads alike.
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    _copy(saved, path)

    plain = landed("ledger", "verify", "--ledger", url, "--trust", head_public, cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # why the witness is needed
    assert "intact" in plain.stdout
    witnessed = landed(
        "ledger", "verify", "--ledger", url, "--trust", head_public, "--witness",
        "--address", temporal_dev, "--json", cwd=tmp_path,
    )  # fmt: skip
    assert witnessed.returncode == 1, witnessed.stdout + witnessed.stderr
    report = json.loads(witnessed.stdout or witnessed.stderr)
    kinds = {f["kind"] for f in report["findings"]}
    assert kinds == {"cut-back"}, report["findings"]
    assert f"at position {early}" in report["findings"][0]["message"]
    assert await _positions(place, head_public) == (early, early)  # the gauges go down

    # The same offline: the witness's heads saved to a file, compared later.
    shown = landed(
        "ledger", "witness", "--trust", head_public, "--address", temporal_dev, cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    (tmp_path / "witness.json").write_text(shown.stdout)
    offline = landed(
        "ledger", "verify", "--ledger", url, "--trust", head_public,
        "--witness-file", tmp_path / "witness.json", cwd=tmp_path,
    )  # fmt: skip
    assert offline.returncode == 1 and "cut-back" in offline.stdout, offline.stdout
