"""The exporter's saved state: a restart reads on from it to the figures a full read gives, and
refuses it (reading the ledger from its start) whenever the ledger does not bear it out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from helpers.chain import Owner
from helpers.exporter import Place, exporter_on, get
from helpers.scorecard import settled
from test_tripwire_metrics import tripped

from landed.activities.loops import trip_event
from landed.ledger import audit_heads
from landed.ledger.base import Ledger
from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.signing import KeyPair
from landed.telemetry import state as state_module
from landed.telemetry.exporter import Exporter

pytestmark = pytest.mark.slow

CAP = 3  # label values named before others fold: the fold must survive a resume


def stateful(place: Place, path: Path, **settings: object) -> Exporter:
    values: dict[str, object] = {"use_state": True, "max_label_values": CAP, **settings}
    return exporter_on(place, state_path=path, **values)


async def texts(exporter: Exporter) -> tuple[bytes, bytes, str]:
    """Both expositions and the page, after the exporter's start."""
    url = await exporter.start()
    try:
        plain, openmetrics = await exporter.scrape(False), await exporter.scrape(True)
        page = (await get(url))[1]
    finally:
        await exporter.stop()
    return plain, openmetrics, page


async def first_half(ledger: Ledger) -> None:
    await ledger.claim("st-1", "run-1", 1, "0" * 64, owner="alice", loop="nightly")
    await ledger.append_many(
        [
            settled("st-1", owner="alice", loop="nightly", usd=1.25),
            settled("st-2", owner="bob", verdict="held"),
            settled("st-3", owner="carol", verdict="failed", ms=700.0),
            settled("st-4", owner="dave", loop="hourly", usd=0.1),  # past the cap: "other"
        ]
    )
    await ledger.append_event(trip_event(tripped("nightly", 1, "3 not-done in a row", True)))


async def second_half(ledger: Ledger) -> None:
    await ledger.claim("st-5", "run-5", 1, "0" * 64, owner="erin", loop="daily")
    await ledger.claim("st-2", "run-2", 2, "0" * 64)
    await ledger.append_many(
        [
            settled("st-1", owner="alice", loop="nightly", verdict="reversed", attempt=2),
            settled("st-5", owner="erin", loop="daily", verdict="held", usd=0.3),
            settled("st-2", owner="bob", attempt=2),  # bob's hold is settled
            settled("repair-nightly-1-1", owner="alice", loop="nightly", usd=0.7),
        ]
    )
    await ledger.append_event(trip_event(tripped("hourly", 1, "proof rate 0.4", False)))


async def test_a_resumed_exporter_serves_what_a_full_read_serves(
    place: Place, ledger: Ledger, tmp_path: Path
) -> None:
    path = tmp_path / "exporter-state.json"
    await first_half(ledger)
    first = stateful(place, path)
    await texts(first)
    saved = orjson.loads(path.read_bytes())
    assert saved["reader"]["cursor"] == first.reader.cursor == 4
    assert saved["board"]["owners"]["names"] == ["alice", "bob", "carol"]
    await second_half(ledger)
    resumed = stateful(place, path)
    warm = await texts(resumed)
    assert resumed.resumed and resumed.state_refused == ""
    assert resumed.board.rows_read == 8
    cold = await texts(stateful(place, tmp_path / "none.json", use_state=False))
    assert warm == cold
    assert b'landed_reversals_total{loop="nightly",owner="alice"} 1.0' in warm[0]
    assert b'landed_held_total{loop="daily",owner="other"} 1.0' in warm[0]
    assert b'landed_tripwire_trips_total{loop="hourly"' in warm[0]


async def saved_then(place: Place, ledger: Ledger, path: Path) -> None:
    await first_half(ledger)
    await texts(stateful(place, path))
    assert path.exists()


async def refused(place: Place, path: Path, why: str, **settings: object) -> None:
    """The state is refused (``why`` in the reason), and the figures are a full read's."""
    again = stateful(place, path, **settings)
    warm = await texts(again)
    assert not again.resumed
    assert why in again.state_refused
    cold = await texts(stateful(place, path.with_name("none.json"), use_state=False, **settings))
    assert warm == cold


async def test_the_state_of_another_ledger_is_refused(sqlite_place: Place, tmp_path: Path) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await saved_then(sqlite_place, ledger, path)
    other = Place(f"sqlite:///{tmp_path / 'other.db'}", "sqlite", path=tmp_path / "other.db")
    async with await open_ledger(other.url) as ledger:
        await ledger.append_many([settled(f"other-{i}", owner="zed") for i in range(5)])
    await refused(other, path, "does not hold the receipts row")


async def test_a_ledger_cut_back_below_the_cursor_is_refused(
    place: Place, ledger: Ledger, tmp_path: Path
) -> None:
    path = tmp_path / "exporter-state.json"
    await saved_then(place, ledger, path)
    owner = _owner(place)
    owner.drop_triggers()
    owner.run("DELETE FROM {t} WHERE sequence > 2")
    await refused(place, path, "cut back or rewritten")


@pytest.mark.parametrize("edit", ["body", "relinked"])
async def test_a_row_edited_at_the_cursor_is_refused(
    sqlite_place: Place, tmp_path: Path, edit: str
) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await saved_then(sqlite_place, ledger, path)
    owner = _owner(sqlite_place)
    owner.drop_triggers()
    if edit == "body":  # the body changed, its hash and link left as they were
        owner.run("UPDATE {t} SET body = replace(body, 'dave', 'mallory') WHERE sequence = 4")
    else:  # a forger who recomputes the chain from the edited row on
        owner.run("UPDATE {t} SET verdict = 'failed' WHERE sequence = 4")
        owner.relink_from(4)
    await refused(sqlite_place, path, "does not hold the receipts row at 4")


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda raw: b"\x80not json" + raw[:10], "not a JSON object"),
        (lambda raw: raw[: len(raw) // 2], "not a JSON object"),
        (lambda raw: raw.replace(b'"version":1', b'"version":0'), "state format 0"),
        (lambda raw: raw.replace(b'"rows_read":4', b'"rows_read":"4"'), "rows_read"),
    ],
    ids=["corrupt", "truncated", "wrong-version", "wrong-type"],
)
async def test_a_damaged_state_file_is_refused(
    sqlite_place: Place, tmp_path: Path, damage: object, why: str
) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await saved_then(sqlite_place, ledger, path)
    assert callable(damage)
    path.write_bytes(damage(path.read_bytes()))
    await refused(sqlite_place, path, why)


async def test_an_oversized_state_file_is_refused_unread(
    sqlite_place: Place,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await saved_then(sqlite_place, ledger, path)
    monkeypatch.setattr(state_module, "MAX_STATE_BYTES", 100)
    caplog.clear()
    await refused(sqlite_place, path, "longer than 100 bytes")
    # Nor is a state written that the next start would refuse: the old file stays as it was.
    assert "could not be saved" in caplog.text and "more than 100" in caplog.text
    assert not list(tmp_path.glob("*.tmp"))


async def test_a_changed_label_cap_refuses_the_state(sqlite_place: Place, tmp_path: Path) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await saved_then(sqlite_place, ledger, path)
    await refused(sqlite_place, path, "max_label_values", max_label_values=CAP + 1)


async def test_no_state_reads_and_writes_no_file(sqlite_place: Place, tmp_path: Path) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await first_half(ledger)
    await texts(stateful(sqlite_place, path, use_state=False))
    assert not path.exists()


def _owner(place: Place) -> Owner:
    if place.path is not None:
        return Owner(place.url, path=place.path)
    return Owner(place.url, dsn=place.admin_dsn, schema=place.schema)


async def test_a_broken_chain_is_walked_again_not_resumed(
    sqlite_place: Place, tmp_path: Path
) -> None:
    """A walk that found a break saves no place: the resumed exporter walks every chain again
    and still says chain_ok 0, as a full read does."""
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await first_half(ledger)
        owner = _owner(sqlite_place)
        owner.drop_triggers()
        owner.run("UPDATE {t} SET body = replace(body, 'bob', 'mallory') WHERE sequence = 2")
        await texts(stateful(sqlite_place, path))
        assert orjson.loads(path.read_bytes())["chain"] is None
        await ledger.append_many([settled("st-9", owner="zed"), settled("st-10", verdict="held")])
    again = stateful(sqlite_place, path)
    warm = await texts(again)
    assert again.resumed
    assert b"landed_ledger_chain_ok 0.0" in warm[0]
    assert b"landed_ledger_rows_rejected_total 1.0" in warm[0]
    assert warm == await texts(stateful(sqlite_place, path, use_state=False))


async def test_an_intact_walk_resumes_and_still_finds_a_later_break(
    sqlite_place: Place, tmp_path: Path
) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await saved_then(sqlite_place, ledger, path)
        assert orjson.loads(path.read_bytes())["chain"]["cursors"]["receipts"] == 4
        await second_half(ledger)
    owner = _owner(sqlite_place)
    owner.drop_triggers()
    owner.run("UPDATE {t} SET verdict = 'failed' WHERE sequence = 6")  # past the saved place
    again = stateful(sqlite_place, path)
    warm = await texts(again)
    assert again.resumed
    assert b"landed_ledger_chain_ok 0.0" in warm[0]
    assert warm == await texts(stateful(sqlite_place, path, use_state=False))


@pytest.mark.parametrize(("forged_over", "recent"), [(7, None), (2, 2)], ids=["kept", "old"])
async def test_a_walk_with_head_keys_resumes_to_a_fresh_walks_figures(
    place: Place,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    forged_over: int,
    recent: int | None,
) -> None:
    """With the runner's head key the walk keeps what its signed heads need (the links of the
    rows walked, the positions vouched for, the rows awaiting a voucher): heads signed after
    the save are checked against rows walked before it, as a fresh walk checks them."""
    key = KeyPair.generate()
    keys = {"head_keys": [key.save(tmp_path / "keys")[1]]}
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(place.url, signer=HeadSigner(key, every=3)) as ledger:
        await first_half(ledger)
        await texts(stateful(place, path, **keys))
        heads = orjson.loads(path.read_bytes())["chain"]["walks"]["receipts"][7]
        assert heads[0] and heads[2]  # heads seen, links kept for heads still to come
        await second_half(ledger)
    again = stateful(place, path, **keys)
    warm = await texts(again)
    assert again.resumed
    assert b"landed_ledger_chain_ok 1.0" in warm[0]
    assert warm == await texts(stateful(place, path, use_state=False, **keys))
    # A head the runner never signed, forged over a walked row, is found as a fresh walk
    # finds it: over a row whose link the state keeps, at once; over an older one (the walk
    # keeps the last MAX_RECENT links) by walking every chain again.
    if recent is not None:
        monkeypatch.setattr(audit_heads, "MAX_RECENT", recent)
        await texts(stateful(place, path, **keys))  # saved with only the last links
    _forge_head(place, key, forged_over)
    later = stateful(place, path, **keys)
    caplog.clear()
    warm = await texts(later)
    assert later.resumed
    assert ("walking every chain again" in caplog.text) is (recent is not None)
    assert b"landed_ledger_chain_ok 0.0" in warm[0]
    assert warm == await texts(stateful(place, path, use_state=False, **keys))


def _heads_sql(place: Place, statement: str) -> str:
    heads = (
        "landed_chain_heads" if place.path is not None else f'"{place.schema}".landed_chain_heads'
    )
    return statement.replace("{h}", heads)


def _forge_head(place: Place, key: KeyPair, sequence: int) -> None:
    owner = _owner(place)
    pos, seq, link = owner.run(
        "SELECT chain_pos, sequence, chain_link FROM {t} WHERE sequence = %s", sequence
    )[0]
    owner.run(
        _heads_sql(
            place,
            "INSERT INTO {h} (chain_pos, sequence, chain_link, key_id, signed_at, signature)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
        ),
        pos,
        seq,
        link,
        key.key_id,
        "2026-11-07T02:00:00+00:00",
        "00" * 64,
    )


async def test_the_state_is_saved_every_few_seconds(sqlite_place: Place, tmp_path: Path) -> None:
    path = tmp_path / "exporter-state.json"
    async with await open_ledger(sqlite_place.url) as ledger:
        await first_half(ledger)
    exporter = stateful(sqlite_place, path, state_every_seconds=1)
    await exporter.start()
    try:
        for _ in range(50):
            if path.exists():
                break
            await asyncio.sleep(0.1)
        assert orjson.loads(path.read_bytes())["board"]["rows_read"] == 4
    finally:
        await exporter.stop()
