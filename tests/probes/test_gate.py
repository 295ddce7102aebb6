"""The Python API: ``landed.verify()`` returns a verdict, ``landed.gate()`` raises; no retries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.http import LocalHTTP, Request, Response

import landed
from landed import (
    CommandProbe,
    Count,
    Duplicated,
    Empty,
    InvalidContract,
    Mismatch,
    NonEmpty,
    NotLanded,
    ProbeFailed,
    SourceRegistry,
    Vacuous,
)


@pytest.fixture
def server() -> Iterator[LocalHTTP]:
    srv = LocalHTTP().start()
    yield srv
    srv.stop()


async def test_verify_returns_a_labelled_verdict() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        verdict = await landed.verify(
            "insert 45 rows", CommandProbe(argv=["echo", "45"]), Count(value=45), registry=registry
        )
    assert verdict.landed and verdict.outcome is landed.Outcome.PASS
    assert verdict.action == "insert 45 rows"
    assert verdict.expectation == "count(45)"
    assert verdict.weak is False and verdict.note == ""


async def test_weak_default_is_labelled_in_the_returned_verdict() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        verdict = await landed.verify(
            "insert 45 rows",
            {"kind": "command", "argv": ["echo", "0"]},
            {"type": "non_empty"},
            registry=registry,
        )
    assert verdict.landed
    assert verdict.weak is True
    assert verdict.expectation == "non_empty (weak default)"
    assert "any non-empty output would have passed" in verdict.note
    assert verdict.model_dump()["weak"] is True


async def test_gate_raises_the_subclass_that_says_what_happened(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table t (n int)")
    async with SourceRegistry({"db": {"url": f"sqlite:///{db}"}}, allow_unsourced=True) as registry:
        probe = {"kind": "record", "source": "db", "query": "select count(*) from t"}
        with pytest.raises(Empty) as empty:
            await landed.gate("insert 45 rows", probe, Count(value=45), registry=registry)
        assert isinstance(empty.value, Mismatch) and isinstance(empty.value, NotLanded)
        assert empty.value.verdict is not None and empty.value.verdict.observation.value == 0
        with sqlite3.connect(db) as conn:
            conn.executemany("insert into t values (?)", [(1,)] * 90)
        with pytest.raises(Duplicated):
            await landed.gate("insert 45 rows", probe, Count(value=45), registry=registry)
        before = await landed.verify("insert 45 rows", probe, Count(value=90), registry=registry)
        with pytest.raises(Vacuous):
            await landed.gate(
                "insert 90 rows",
                probe,
                Count(value=90),
                registry=registry,
                before=before.observation,
            )
        missing = {"kind": "record", "source": "nowhere", "query": "select 1"}
        with pytest.raises(ProbeFailed) as failed:
            await landed.gate("insert 45 rows", missing, Count(value=45), registry=registry)
        assert not isinstance(failed.value, Mismatch)
        verdict = await landed.gate("insert 90 rows", probe, Count(value=90), registry=registry)
        assert verdict.landed


async def test_a_callable_probe_is_refused_by_verify_and_gate() -> None:
    inserted = 45  # the action's own return value

    async with SourceRegistry({}, allow_unsourced=True) as registry:
        with pytest.raises(InvalidContract, match="not a callable"):
            await landed.verify(
                "insert 45 rows", lambda: inserted, Count(value=45), registry=registry
            )
        with pytest.raises(NotLanded):
            await landed.gate(
                "insert 45 rows", lambda: inserted, Count(value=45), registry=registry
            )

        async def async_probe() -> int:
            return inserted

        with pytest.raises(InvalidContract):
            await landed.verify("insert 45 rows", async_probe, Count(value=45), registry=registry)
        with pytest.raises(InvalidContract):
            await landed.verify("insert 45 rows", inserted, Count(value=45), registry=registry)


async def test_missing_or_unknown_expectation_is_refused() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        for expect in (None, {"type": "nonEmpty"}, {}, "count(45)"):
            with pytest.raises(InvalidContract):
                await landed.gate("x", CommandProbe(argv=["echo", "0"]), expect, registry=registry)


async def test_no_retry_inside_verify_or_gate(server: LocalHTTP) -> None:
    hits: list[Request] = []

    def flaky(req: Request) -> Response:
        hits.append(req)
        return Response(503, b"try later")

    server.routes["/order"] = flaky
    async with SourceRegistry({"shop": {"url": server.base}}, allow_unsourced=True) as registry:
        probe = {"kind": "http", "source": "shop", "url": "/order"}
        verdict = await landed.verify("place order", probe, NonEmpty(), registry=registry)
        assert verdict.outcome is landed.Outcome.PROBE_ERROR and len(hits) == 1
        with pytest.raises(ProbeFailed):
            await landed.gate("place order", probe, NonEmpty(), registry=registry)
        assert len(hits) == 2


async def test_verify_without_a_registry_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = tmp_path / "t.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table t (n int)")
        conn.execute("insert into t values (1)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANDED_SOURCES__ORDERS_DB__URL", f"sqlite:///{db}")
    monkeypatch.setenv("LANDED_OBSERVER", "env-verifier")
    verdict = await landed.verify(
        "insert 1 row",
        {"kind": "record", "source": "orders-db", "query": "select count(*) from t"},
        Count(value=1),
    )
    assert verdict.landed and verdict.observation.observer == "env-verifier"


async def test_empty_error_and_timeout_are_reported_never_filled_in() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        empty = await landed.verify(
            "x", CommandProbe(argv=["true"]), Count(value=45), registry=registry
        )
        error = await landed.verify(
            "x", CommandProbe(argv=["false"]), Count(value=45), registry=registry
        )
        slow = await landed.verify(
            "x",
            CommandProbe(argv=["sleep", "5"], timeout_s=0.2),
            Count(value=45),
            registry=registry,
        )
    assert empty.outcome is landed.Outcome.EMPTY and empty.observation.value is None
    assert error.outcome is landed.Outcome.PROBE_ERROR and error.observation.value is None
    assert slow.outcome is landed.Outcome.PROBE_ERROR and slow.observation.value is None
    assert not (empty.landed or error.landed or slow.landed)


async def test_gate_judges_a_count_by_its_value_and_a_change_against_a_before(
    tmp_path: Path,
) -> None:
    """20 order lines there, 45 inserted: gate() with count 45 raises (65 exist); with a change
    of +45 it needs the before-reading, and passes against it."""
    rows = tmp_path / "rows.txt"
    rows.write_text("20\n")
    probe = CommandProbe(argv=["cat", str(rows)])
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        before = await landed.verify("insert", probe, landed.Change(value=45), registry=registry)
        counted = await landed.verify("insert", probe, Count(value=45), registry=registry)
        rows.write_text("65\n")
        with pytest.raises(Mismatch, match="before-reading"):
            await landed.gate("insert", probe, landed.Change(value=45), registry=registry)
        with pytest.raises(Duplicated):
            await landed.gate(
                "insert", probe, Count(value=45), registry=registry, before=counted.observation
            )
        verdict = await landed.gate(
            "insert", probe, landed.Change(value=45), registry=registry, before=before.observation
        )
    assert verdict.landed and "change of +45" in verdict.message
