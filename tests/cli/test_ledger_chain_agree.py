"""On one tampered ledger, `landed ledger verify`, `landed board`, `landed receipts export`, the
exporter and the runner's latest-receipt lookup agree: a forged INSERT with a correct link is
foreign, a row whose attempt was changed breaks the chain, and every row from the break on is
untrusted everywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.chain import Owner, forge, receipt
from helpers.exporter import Place, exporter_on, get, samples, total

from landed.ledger.base import UntrustedRow
from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.signing import KeyPair

pytestmark = pytest.mark.slow


def landed(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("landed")
    return subprocess.run(
        [str(exe), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


async def test_verify_board_export_the_exporter_and_latest_agree_on_a_tampered_ledger(
    owner: Owner, tmp_path: Path
) -> None:
    key, keys = KeyPair.generate(), tmp_path / "head-keys"
    key.save(keys)
    async with await open_ledger(owner.url, signer=HeadSigner(key, every=2)) as ledger:
        for name in ("a", "b", "c", "d"):
            await ledger.append(receipt(name))
    forged = forge(owner, "forged")  # sequence 5: a plain INSERT with a correct link
    owner.drop_triggers()
    owner.run("UPDATE {t} SET attempt = 2 WHERE sequence = 3")  # c's attempt: the link breaks
    trust = ("--trust", keys, "--foreign-after", "0")
    where = ("--ledger", owner.url)

    checked = landed("ledger", "verify", *where, *trust, "--json", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    report = json.loads(checked.stdout)
    found = {(f["kind"], f["sequence"]) for f in report["findings"]}
    assert {("link_broken", 3), ("foreign", forged)} <= found, found
    assert report["foreign_rows"] == 1

    shown = landed("board", *where, *trust, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    board = json.loads(shown.stdout)
    untrusted = {t["task_id"] for t in board["tasks"] if t["chain"] == "untrusted"}
    assert untrusted == {"c", "d", "forged"} and board["untrusted"] == 3

    out = tmp_path / "export.jsonl"
    exported = landed("receipts", "export", *where, *trust, "-o", out, cwd=tmp_path)
    assert exported.returncode == 0 and "3 marked" in exported.stderr, exported.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    marked = {r["task_id"] for r in lines if r.get("x-landed-chain") == "untrusted"}
    assert marked == untrusted and len(lines) == 5

    place = Place(owner.url, "sqlite" if owner.path else "postgres", path=owner.path)
    exporter = exporter_on(place, head_keys=[keys], foreign_after=0.0)
    url = await exporter.start()
    try:
        metrics = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(metrics, "landed_ledger_chain_ok") == 0
    assert total(metrics, "landed_ledger_foreign_rows") == report["foreign_rows"]

    async with await open_ledger(owner.url, create=False) as ledger:
        assert await ledger.latest("b") is not None
        for task in ("c", "d", "forged"):
            with pytest.raises(UntrustedRow):
                await ledger.latest(task)


async def test_on_an_intact_ledger_they_agree_too(owner: Owner, tmp_path: Path) -> None:
    key, keys = KeyPair.generate(), tmp_path / "head-keys"
    key.save(keys)
    async with await open_ledger(owner.url, signer=HeadSigner(key, every=2)) as ledger:
        for name in ("a", "b", "c"):
            await ledger.append(receipt(name))
    trust = ("--trust", keys, "--foreign-after", "0")
    where = ("--ledger", owner.url)
    assert landed("ledger", "verify", *where, *trust, cwd=tmp_path).returncode == 0
    board = json.loads(landed("board", *where, *trust, "--json", cwd=tmp_path).stdout)
    assert board["untrusted"] == 0
    place = Place(owner.url, "sqlite" if owner.path else "postgres", path=owner.path)
    exporter = exporter_on(place, head_keys=[keys], foreign_after=0.0)
    url = await exporter.start()
    try:
        metrics = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(metrics, "landed_ledger_chain_ok") == 1
    assert total(metrics, "landed_ledger_foreign_rows") == 0
