"""``landed doctor`` as a user runs it, against a real Temporal dev server: a healthy setup
(the roles running, in process) passes every check (exit 0); a namespace without landed's
search attributes and an address nobody answers are each named with their fix (exit 1), quickly
and without a crash at exit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.wait import until

from landed.cli.doctor_roles import role_checks
from landed.dev.server import NO_PROFILE_FILE, free_port
from landed.signing import KeyPair
from landed.task.names import SEARCH_ATTRIBUTES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

BIN = Path(sys.executable).parent
ROLE_CHECKS = ["actor polling", "verifier polling", "runner polling", "acts"]
CHECKS = [
    "temporal",
    "search attributes",
    *ROLE_CHECKS,
    "clock",
    "ledger",
    "signing key",
    "trusted keys",
    "sources",
]


def _setup(tmp_path: Path, address: str) -> dict[str, str]:
    """A shell's environment for a complete setup: keys, a ledger at the current schema and a
    source whose file is there."""
    private, public = KeyPair.generate().save(tmp_path / "keys")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    shop = tmp_path / "shop.db"
    shop.write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env.update(NO_PROFILE_FILE)
    env.update(
        {
            "TEMPORAL_ADDRESS": address,
            "LANDED_LEDGER_URL": ledger,
            "LANDED_VERIFIER_SIGNING_KEY": str(private),
            "LANDED_RUNNER_TRUST": str(public),
            "LANDED_SOURCES__SHOP_DB__URL": f"sqlite:///{shop}",
        }
    )
    init = subprocess.run(
        [str(BIN / "landed"), "ledger", "init"], env=env, capture_output=True, text=True, timeout=60
    )
    assert init.returncode == 0, init.stderr
    return env


def _doctor(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, Any, float]:
    started = time.monotonic()
    done = subprocess.run(
        [str(BIN / "landed"), "doctor", "--dir", str(tmp_path / "none"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    took = time.monotonic() - started
    report = json.loads(done.stdout) if "--json" in args else done.stdout
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr
    return done.returncode, report, took


def _by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert [c["name"] for c in report["checks"]] == CHECKS
    return {c["name"]: c for c in report["checks"]}


async def test_a_healthy_setup_passes_every_check(
    temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _setup(tmp_path, temporal_dev)
    async with run_roles(temporal_dev, tmp_path) as roles:
        queues = {f"LANDED_{r.upper()}_TASK_QUEUE": q for r, q in roles.queues.items()}
        env.update(queues)
        for name, queue in queues.items():
            monkeypatch.setenv(name, queue)

        async def polled() -> bool:
            return all(c.ok for c in (await role_checks(roles.temporal, 10.0))[0])

        # A worker just started may not have polled yet.
        await until("every role polling", polled, timeout=60, every=0.5)
        # Generous: the actor answers the runner's preflight within it on a loaded machine.
        slow = ("--timeout", "20")
        status, report, _ = await asyncio.to_thread(_doctor, tmp_path, env, "--json", *slow)
        checks = _by_name(report)
        assert status == 0 and report["ok"] is True, report
        assert all(c["ok"] and c["fix"] is None for c in checks.values()), report
        assert temporal_dev in checks["temporal"]["detail"]
        assert "test.rows" in checks["acts"]["detail"]
        assert "Temporal" in checks["clock"]["detail"]
        assert "1 resolve: shop_db" in checks["sources"]["detail"]
        status, text, _ = await asyncio.to_thread(_doctor, tmp_path, env, *slow)
        assert status == 0 and "all checks pass" in text and "PROBLEM" not in text


def test_a_namespace_without_landeds_search_attributes_is_named_with_the_command(
    temporal_dev: str, tmp_path: Path
) -> None:
    env = _setup(tmp_path, temporal_dev)
    namespace = f"bare-{uuid.uuid4().hex[:8]}"
    create = [str(BIN / "temporal"), "operator", "namespace", "create", "--namespace", namespace]
    made = subprocess.run(
        [*create, "--address", temporal_dev], capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    status, report, _ = _doctor(tmp_path, env, "--json", "--namespace", namespace)
    checks = _by_name(report)
    assert status == 1 and report["ok"] is False
    assert checks["temporal"]["ok"] and not checks["search attributes"]["ok"]
    for name in SEARCH_ATTRIBUTES:
        assert name in checks["search attributes"]["detail"]
        assert f"--name {name} --type Keyword" in checks["search attributes"]["fix"]
    assert f"--namespace {namespace}" in checks["search attributes"]["fix"]
    # The rest of the setup is fine: only what is wrong is reported as a problem (no role
    # polls in the new namespace).
    assert [n for n, c in checks.items() if not c["ok"]] == ["search attributes", *ROLE_CHECKS]
    assert "landed worker runner" in checks["runner polling"]["fix"]


def test_a_namespace_that_does_not_exist_says_to_create_it(
    temporal_dev: str, tmp_path: Path
) -> None:
    env = _setup(tmp_path, temporal_dev)
    status, report, _ = _doctor(tmp_path, env, "--json", "--namespace", "no-such-namespace")
    check = _by_name(report)["search attributes"]
    assert status == 1 and not check["ok"]
    assert "temporal operator namespace create --namespace no-such-namespace" in check["fix"]


def test_an_address_nobody_answers_is_named_quickly(temporal_dev: str, tmp_path: Path) -> None:
    env = {**_setup(tmp_path, temporal_dev), "TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}"}
    status, report, took = _doctor(tmp_path, env, "--json", "--timeout", "3")
    checks = _by_name(report)
    assert status == 1 and not checks["temporal"]["ok"]
    assert "TEMPORAL_ADDRESS" in checks["temporal"]["fix"]
    assert not checks["search attributes"]["ok"]
    assert "not checked" in checks["search attributes"]["detail"]
    assert [n for n, c in checks.items() if not c["ok"]] == [
        "temporal",
        "search attributes",
        *ROLE_CHECKS,
        "clock",
    ]
    assert all("not checked" in checks[n]["detail"] for n in ROLE_CHECKS)
    assert took < 30
    status, text, _ = _doctor(tmp_path, env, "--timeout", "3")
    assert status == 1 and "PROBLEM" in text and "fix: start Temporal" in text
