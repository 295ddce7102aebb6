"""The exporter's head gauges on both backends: the chain's head position, and the latest head
the trusted runner key signed; without a trusted key the signed gauge is absent (fail closed),
and a key that signed nothing there reads 0."""

from __future__ import annotations

from pathlib import Path

from helpers.chain import pg_ledger, seed
from helpers.exporter import Place, exporter_on, samples

from landed.signing import KeyPair

HEAD = ("landed_ledger_head_position", ())
SIGNED = ("landed_ledger_last_signed_position", ())


async def _gauges(url: str, trust: Path | None) -> dict[tuple[str, tuple[()]], float]:
    exporter = exporter_on(Place(url, "any"), head_keys=[trust] if trust else [])
    try:
        found = samples((await exporter.scrape()).decode())
    finally:
        await exporter.stop()
    return {k: v for k, v in found.items() if k in (HEAD, SIGNED)}  # type: ignore[misc]


async def _check(url: str, tmp_path: Path) -> None:
    key, other = KeyPair.generate(), KeyPair.generate()
    _, public = key.save(tmp_path / "head")
    _, stranger = other.save(tmp_path / "other")
    await seed(url, key, n=7, every=3)  # heads at 3 and 6, and 7 signed at close
    assert await _gauges(url, public) == {HEAD: 7, SIGNED: 7}
    assert await _gauges(url, None) == {HEAD: 7}
    assert await _gauges(url, stranger) == {HEAD: 7, SIGNED: 0}


async def test_head_gauges_on_sqlite(tmp_path: Path) -> None:
    await _check(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path)


async def test_head_gauges_on_postgres(tmp_path: Path, postgres_dsn: str) -> None:
    with pg_ledger(postgres_dsn) as owner:
        await _check(owner.url, tmp_path)
