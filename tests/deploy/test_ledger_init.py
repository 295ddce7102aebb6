"""The cluster sets up the ledger: the landed-ledger-init Job's command, run as the owner,
upgrades a PostgreSQL ledger from an older schema (two runs at once too), and
`landed worker runner --check` says which version it found and what to run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.k8s import docs, render
from psycopg import sql

from landed.ledger.postgres import schema as pg_schema
from landed.signing import KeyPair

pytestmark = pytest.mark.slow


@pytest.fixture
def ledger(postgres_dsn: str) -> Iterator[str]:
    """An owner's ledger URL on a schema and writer role of this test's own."""
    tag = uuid.uuid4().hex[:10]
    schema, role = f"ledger_init_{tag}", f"landed_writer_init_{tag}"
    yield f"{postgres_dsn}?schema={schema}&writer_role={role}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _job_argv() -> list[str]:
    """The Job's container args, as the worker-controller overlay renders them."""
    job = next(
        o
        for o in docs(render("worker-controller"))
        if o["kind"] == "Job" and o["metadata"]["name"] == "landed-ledger-init"
    )
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "$(LANDED_LEDGER_OWNER_URL)" in args
    return [str(a) for a in args]


async def _landed(*argv: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "landed",
        *argv,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return int(proc.returncode or 0), out.decode(), err.decode()


async def _job(owner_url: str) -> tuple[int, str, str]:
    # The kubelet expands $(VAR) from the container's env (the landed-ledger-owner Secret).
    argv = [a.replace("$(LANDED_LEDGER_OWNER_URL)", owner_url) for a in _job_argv()]
    return await _landed(*argv, env={})


async def _check(url: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    _, pub = KeyPair.generate().save(tmp_path / f"k{uuid.uuid4().hex[:6]}")
    env = {"LANDED_RUNNER_LEDGER_URL": url, "LANDED_RUNNER_TRUST": str(pub)}
    code, out, err = await _landed(
        "worker", "runner", "--check", env={**env, "LANDED_BUILD_ID": "b1"}
    )
    assert code == 0, out + err
    return json.loads(out.strip().splitlines()[-1])["ledger"], err


async def _older(url: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """A ledger as the release before this one left it: every step but the last."""
    from landed.ledger.postgres.url import split_url

    old = pg_schema.SCHEMA_VERSION - 1
    dsn, schema, role = split_url(url)
    with monkeypatch.context() as m:
        m.setattr(pg_schema, "SCHEMA_VERSION", old)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            assert await pg_schema.migrate(conn, schema, role) == old
    return old


async def test_the_job_upgrades_an_older_schema_and_check_says_so(
    ledger: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, _ = await _check(ledger, tmp_path)
    assert found["status"] == "missing" and found["found"] == 0
    old = await _older(ledger, monkeypatch)
    found, err = await _check(ledger, tmp_path)
    assert (found["found"], found["needs"], found["status"]) == (
        old,
        pg_schema.SCHEMA_VERSION,
        "behind",
    )
    assert "landed-ledger-init" in found["run"] and "landed-ledger-init" in err
    code, out, err = await _job(ledger)
    assert code == 0, out + err
    found, err = await _check(ledger, tmp_path)
    assert (found["found"], found["status"], found["run"]) == (
        pg_schema.SCHEMA_VERSION,
        "current",
        "nothing",
    )
    assert err == ""


async def test_two_jobs_at_once_migrate_once(ledger: str, monkeypatch: pytest.MonkeyPatch) -> None:
    await _older(ledger, monkeypatch)
    results = await asyncio.gather(_job(ledger), _job(ledger))
    assert [r[0] for r in results] == [0, 0], results
    from landed.ledger.postgres.url import split_url

    dsn, schema, _ = split_url(ledger)
    with psycopg.connect(dsn) as conn:
        table = sql.Identifier(schema, "landed_schema_version")
        rows = conn.execute(sql.SQL("SELECT version FROM {} ORDER BY 1").format(table)).fetchall()
    assert [r[0] for r in rows] == list(range(1, pg_schema.SCHEMA_VERSION + 1))
