"""``landed doctor``'s checks of the ledger, the keys and the sources, each in a setup with one
thing wrong: the problem is named with its fix, and the rest still pass."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from helpers.chain import sqlite_at_schema

from landed.cli.doctor_check import Check
from landed.cli.doctor_setup import ledger_check, signing_checks
from landed.cli.doctor_sources import sources_check
from landed.ledger.factory import open_ledger
from landed.signing import KeyPair


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No landed setting from the shell that runs the tests, and no landed.toml here."""
    for name in list(os.environ):
        if name.upper().startswith(("LANDED_", "TEMPORAL_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _keys(monkeypatch: pytest.MonkeyPatch, folder: Path) -> tuple[KeyPair, Path, Path]:
    pair = KeyPair.generate()
    private, public = pair.save(folder)
    monkeypatch.setenv("LANDED_VERIFIER_SIGNING_KEY", str(private))
    monkeypatch.setenv("LANDED_RUNNER_TRUST", str(public))
    return pair, private, public


def _pair(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_keys_where_the_settings_say_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pair, private, _ = _keys(monkeypatch, tmp_path / "keys")
    checks = _pair(signing_checks(tmp_path / "dev"))
    assert checks["signing key"].ok and pair.key_id in checks["signing key"].detail
    assert str(private) in checks["signing key"].detail
    assert checks["trusted keys"].ok


def test_without_settings_landed_devs_keys_stand_in(tmp_path: Path) -> None:
    home = tmp_path / ".landed"
    KeyPair.generate().save(home / "keys")
    assert all(c.ok for c in signing_checks(home))
    missing = _pair(signing_checks(tmp_path / "elsewhere"))
    assert not missing["signing key"].ok and "LANDED_VERIFIER_SIGNING_KEY" in str(
        missing["signing key"].fix
    )
    assert not missing["trusted keys"].ok and "LANDED_RUNNER_TRUST" in str(
        missing["trusted keys"].fix
    )


def test_a_trust_store_without_the_verifiers_key_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pair, _, _ = _keys(monkeypatch, tmp_path / "keys")
    _, other = KeyPair.generate().save(tmp_path / "other")
    monkeypatch.setenv("LANDED_RUNNER_TRUST", str(other))
    checks = _pair(signing_checks(tmp_path))
    assert checks["signing key"].ok
    trust = checks["trusted keys"]
    assert not trust.ok and pair.key_id in trust.detail
    assert f"landed-{pair.key_id}.pub" in str(trust.fix)


def test_a_signing_key_others_can_read_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, private, _ = _keys(monkeypatch, tmp_path / "keys")
    private.chmod(0o644)
    check = _pair(signing_checks(tmp_path))["signing key"]
    assert not check.ok and f"chmod 600 {private}" in check.detail


def test_the_ledger_at_the_current_schema_passes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"

    async def made() -> Check:
        ledger = await open_ledger(url)
        await ledger.close()
        return await ledger_check(url, 5.0)

    check = asyncio.run(made())
    assert check.ok, check


def test_a_missing_or_old_ledger_is_named_with_the_fix(tmp_path: Path) -> None:
    missing = asyncio.run(ledger_check(f"sqlite:///{tmp_path / 'none.db'}", 5.0))
    assert not missing.ok and "schema missing" in missing.detail
    assert "landed ledger init" in str(missing.fix)
    assert not (tmp_path / "none.db").exists()  # the doctor creates nothing
    sqlite_at_schema(tmp_path / "old.db", 3)
    old = asyncio.run(ledger_check(f"sqlite:///{tmp_path / 'old.db'}", 5.0))
    assert not old.ok and "schema behind (version 3" in old.detail
    bad = asyncio.run(ledger_check("mysql://somewhere/db", 5.0))
    assert not bad.ok and "LANDED_LEDGER_URL" in str(bad.fix)


def test_sources_that_resolve_pass_and_one_that_does_not_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "shop.db").write_bytes(b"")
    monkeypatch.setenv("LANDED_SOURCES__SHOP__URL", f"sqlite:///{tmp_path / 'shop.db'}")
    monkeypatch.setenv("LANDED_SOURCES__DOCS__KIND", "file")
    monkeypatch.setenv("LANDED_SOURCES__DOCS__PATH", str(tmp_path))
    assert asyncio.run(sources_check(5.0)).ok
    monkeypatch.setenv("LANDED_SOURCES__GONE__URL", f"sqlite:///{tmp_path / 'gone.db'}")
    check = asyncio.run(sources_check(5.0))
    assert not check.ok and "gone: no SQLite file at" in check.detail
    assert "LANDED_SOURCES__GONE__" in check.detail and "shop" not in check.detail


def test_no_source_at_all_or_a_bad_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    none = asyncio.run(sources_check(5.0))
    assert not none.ok and "LANDED_SOURCES__<NAME>__URL" in str(none.fix)
    monkeypatch.setenv("LANDED_SOURCES__WEIRD__URL", "ftp://example.com/x")
    bad = asyncio.run(sources_check(5.0))
    assert not bad.ok and "invalid" in bad.detail
