"""``observe()``: what every Observation carries, before/after readings, and refusals."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from landed.probes.contract import (
    Change,
    CommandProbe,
    Contains,
    Count,
    NonEmpty,
    Observation,
    Outcome,
    RecordProbe,
)
from landed.probes.observe import observe, probe_digest
from landed.probes.sources import SourceRegistry
from landed.probes.verdict import InvalidContract


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table t (batch int)")
    return path


def insert(db: Path, batch: int, n: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.executemany("insert into t values (?)", [(batch,)] * n)


async def test_every_observation_carries_what_was_read_and_by_whom() -> None:
    before = datetime.now(UTC)
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        obs = await observe(
            CommandProbe(argv=["echo", "45"]),
            Count(value=45),
            registry=registry,
            observer="verifier-1",
        )
    assert obs.outcome is Outcome.PASS
    assert obs.expectation == "count(45)"
    assert obs.weak is False
    assert obs.kind == "command"
    assert obs.observer == "verifier-1"
    assert before <= obs.observed_at <= datetime.now(UTC) + timedelta(seconds=1)
    assert obs.duration_ms > 0
    assert obs.evidence is not None
    assert obs.evidence.text == "45\n"
    assert obs.evidence.total_bytes == 3
    assert obs.evidence.sha256 == hashlib.sha256(b"45\n").hexdigest()
    assert obs.value == 45
    assert obs.probe_sha256 == probe_digest(CommandProbe(argv=["echo", "45"]))


async def test_observation_json_is_deterministic_and_round_trips(db: Path) -> None:
    async with SourceRegistry({"db": {"url": f"sqlite:///{db}"}}, allow_unsourced=True) as registry:
        obs = await observe(
            RecordProbe(source="db", query="select count(*) from t"),
            Count(value=0),
            registry=registry,
            observer="v",
        )
    data = json.loads(obs.model_dump_json())
    assert list(data) == list(Observation.model_fields)
    assert Observation.model_validate_json(obs.model_dump_json()) == obs
    assert obs.model_dump_json() == Observation.model_validate(data).model_dump_json()
    assert obs.source == "db"


async def test_evidence_is_capped_with_the_digest_of_everything() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        obs = await observe(
            CommandProbe(argv=["head", "-c", "5000", "/dev/zero"]),
            NonEmpty(),
            registry=registry,
            observer="v",
            evidence_cap=100,
        )
    assert obs.evidence is not None
    assert obs.evidence.truncated
    assert len(obs.evidence.text) == 100 * 4  # each NUL is shown as \x00
    assert obs.evidence.total_bytes == 5000
    assert obs.evidence.sha256 == hashlib.sha256(b"\0" * 5000).hexdigest()


async def test_before_and_after_prove_the_insert(db: Path) -> None:
    probe = RecordProbe(source="db", query="select count(*) from t where batch = 7")
    async with SourceRegistry({"db": {"url": f"sqlite:///{db}"}}, allow_unsourced=True) as registry:
        pre = await observe(probe, Count(value=45), registry=registry, observer="v")
        assert pre.outcome is Outcome.EMPTY
        insert(db, 7, 45)
        post = await observe(probe, Count(value=45), registry=registry, observer="v", before=pre)
        assert post.outcome is Outcome.PASS and post.before_value == 0 and post.value == 45
        # Nothing new happens: the same claim read again proves nothing.
        again_pre = post
        again = await observe(
            probe, Count(value=45), registry=registry, observer="v", before=again_pre
        )
        assert again.outcome is Outcome.VACUOUS


async def test_a_whole_table_count_proves_an_insert_with_change(db: Path) -> None:
    insert(db, 1, 1000)
    probe = RecordProbe(source="db", query="select count(*) from t")
    async with SourceRegistry({"db": {"url": f"sqlite:///{db}"}}, allow_unsourced=True) as registry:
        pre = await observe(probe, Change(value=45), registry=registry, observer="v")
        assert pre.outcome is Outcome.MISMATCH  # a change alone is never a pass
        insert(db, 2, 90)
        post = await observe(probe, Change(value=45), registry=registry, observer="v", before=pre)
        # Count judges the value: 1090 rows are not 45 (the plan's old meaning took the change).
        c45 = Count(value=45)
        old_pre = await observe(probe, c45, registry=registry, observer="v", meaning=1)
        insert(db, 3, 45)
        old = await observe(probe, c45, registry=registry, observer="v", before=old_pre, meaning=1)
    assert post.outcome is Outcome.DUPLICATED  # 90 landed where 45 were claimed
    assert "change of +90" in post.message
    assert old.outcome is Outcome.PASS and "change of 45" in old.message


async def test_a_page_that_already_said_it_is_vacuous(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<h1>Team plan</h1>")
    probe = CommandProbe(argv=["cat", str(page)])
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        pre = await observe(probe, Contains(value="Team plan"), registry=registry, observer="v")
        post = await observe(
            probe, Contains(value="Team plan"), registry=registry, observer="v", before=pre
        )
    assert post.outcome is Outcome.VACUOUS


async def test_before_of_another_probe_is_refused() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        pre = await observe(
            CommandProbe(argv=["echo", "1"]), Count(value=1), registry=registry, observer="v"
        )
        with pytest.raises(ValueError, match="before reading"):
            await observe(
                CommandProbe(argv=["echo", "1"]),
                Count(value=2),
                registry=registry,
                observer="v",
                before=pre,
            )


async def test_a_callable_probe_is_rejected_it_cannot_be_the_actions_return_value() -> None:
    result = {"inserted": 45}
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        with pytest.raises(InvalidContract, match="not a callable"):
            await observe(
                lambda: result["inserted"], Count(value=45), registry=registry, observer="v"
            )
        with pytest.raises(InvalidContract, match="not int"):
            await observe(45, Count(value=45), registry=registry, observer="v")


async def test_dict_probes_and_expectations_are_accepted_as_data() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        obs = await observe(
            {"kind": "command", "argv": ["echo", "200 OK"]},
            {"type": "contains", "value": "200"},
            registry=registry,
            observer="v",
        )
    assert obs.outcome is Outcome.PASS and obs.expectation == 'contains("200")'


async def test_unknown_expectation_type_is_refused_not_degraded() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        with pytest.raises(InvalidContract, match="unknown expectation type 'nonEmpty'"):
            await observe(
                {"kind": "command", "argv": ["echo", "0"]},
                {"type": "nonEmpty"},
                registry=registry,
                observer="v",
            )


async def test_a_failing_reader_is_a_probe_error_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The runner table is swapped for one whose reader raises: a stand-in for a reader bug,
    # since no real source makes a correct reader throw on purpose.
    import landed.probes.observe as obs_mod

    async def broken(*_args: object) -> None:
        raise RuntimeError("reader bug")

    table = dict(obs_mod._RUNNERS)
    table[CommandProbe] = (("command",), broken)  # type: ignore[assignment]
    monkeypatch.setattr(obs_mod, "_RUNNERS", table)
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        obs = await observe(
            CommandProbe(argv=["echo", "1"]), Count(value=1), registry=registry, observer="v"
        )
    assert obs.outcome is Outcome.PROBE_ERROR and "reader bug" in obs.message
