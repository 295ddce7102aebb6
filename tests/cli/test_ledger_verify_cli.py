"""``landed ledger verify`` as a real subprocess: exit 0 intact, 1 tampered (naming the row's
sequence), 2 usage, 3 no ledger; --json on each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.chain import Owner, pg_ledger, seed

from landed.signing import KeyPair

pytestmark = pytest.mark.slow


def landed(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("landed")
    return subprocess.run(
        [str(exe), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60
    )


async def _seeded(owner: Owner, keys: Path) -> None:
    key = KeyPair.generate()
    key.save(keys)
    await seed(owner.url, key)


async def _check(owner: Owner, tmp_path: Path) -> None:
    keys = tmp_path / "head-keys"
    await _seeded(owner, keys)
    ok = landed("ledger", "verify", "--ledger", owner.url, "--trust", keys, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "2 trusted signed head(s)" in ok.stdout and "intact: 0 finding(s)" in ok.stdout
    owner.drop_triggers()
    owner.run("DELETE FROM {t} WHERE sequence = 4")
    bad = landed("ledger", "verify", "--ledger", owner.url, "--trust", keys, "--json", cwd=tmp_path)
    assert bad.returncode == 1, bad.stderr
    report = json.loads(bad.stdout)
    assert report["tampered"] is True
    assert [(f["kind"], f["sequence"]) for f in report["findings"]] == [("deleted", 5)]
    text = landed("ledger", "verify", "--ledger", owner.url, "--trust", keys, cwd=tmp_path)
    assert text.returncode == 1
    assert "between sequence 3 and sequence 5" in text.stdout and "TAMPERED" in text.stdout


async def test_verify_on_sqlite_exits_0_intact_and_1_naming_the_deleted_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    await _check(Owner(f"sqlite:///{path}", path=path), tmp_path)


async def test_verify_on_postgres_exits_0_intact_and_1_naming_the_deleted_row(
    tmp_path: Path, postgres_dsn: str
) -> None:
    with pg_ledger(postgres_dsn) as owner:
        await _check(owner, tmp_path)


async def test_verify_without_trust_is_a_usage_error_and_a_missing_ledger_exits_3(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    owner = Owner(f"sqlite:///{path}", path=path)
    keys = tmp_path / "keys"
    await _seeded(owner, keys)
    usage = landed("ledger", "verify", "--ledger", owner.url, "--json", cwd=tmp_path)
    assert usage.returncode == 2
    assert json.loads(usage.stdout)["error"] == "usage"
    assert "--trust RUNNER_HEAD_KEY.pub" in usage.stderr
    missing_key = landed(
        "ledger", "verify", "--ledger", owner.url, "--trust", tmp_path / "nope.pub", cwd=tmp_path
    )
    assert missing_key.returncode == 2 and "nope.pub" in missing_key.stderr
    chain_only = landed("ledger", "verify", "--ledger", owner.url, "--chain-only", cwd=tmp_path)
    assert chain_only.returncode == 0 and "not checked (--chain-only)" in chain_only.stdout
    gone = landed(
        "ledger", "verify", "--ledger", tmp_path / "none.db", "--chain-only", cwd=tmp_path
    )
    assert gone.returncode == 3 and "no ledger at" in gone.stderr
