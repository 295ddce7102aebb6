"""Which version a role runs as, decided from its settings before it connects (no server)."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from temporalio.common import VersioningBehavior

from landed.dev.server import DevServer
from landed.dev.stack import DevStack
from landed.temporal.role_setup import RoleError, check_settings
from landed.temporal.settings import ActorSettings, RunnerSettings, VerifierSettings
from landed.temporal.versioning import (
    PLACEHOLDER_BUILD_ID,
    VersioningError,
    deployment_config,
    role_version,
)


def test_each_role_has_its_own_deployment_and_the_landed_version_as_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LANDED_BUILD_ID", raising=False)
    for settings in (ActorSettings(), VerifierSettings(), RunnerSettings()):
        found = role_version(settings)
        assert found is not None
        assert found.deployment_name == f"landed-{settings.role}"
        assert found.build_id == version("landed")


def test_one_build_id_for_every_role_and_a_deployment_name_per_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANDED_BUILD_ID", "2026.12.02-0a1b2c3")
    monkeypatch.setenv("BUILD_ID", "not-landed's")  # another program's variable: never read
    monkeypatch.setenv("LANDED_RUNNER_DEPLOYMENT_NAME", "orders-runner")
    runner = role_version(RunnerSettings())
    actor = role_version(ActorSettings())
    assert runner is not None and actor is not None
    assert (runner.deployment_name, runner.build_id) == ("orders-runner", "2026.12.02-0a1b2c3")
    assert (actor.deployment_name, actor.build_id) == ("landed-actor", "2026.12.02-0a1b2c3")


def test_the_runners_workflows_are_pinned_and_versioning_can_be_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = deployment_config(RunnerSettings(build_id="b1"))
    assert config is not None and config.use_worker_versioning
    assert config.default_versioning_behavior == VersioningBehavior.PINNED
    monkeypatch.setenv("LANDED_RUNNER_VERSIONING", "false")
    assert deployment_config(RunnerSettings()) is None


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (RunnerSettings(deployment_name="landed.runner", build_id="b1"), "DEPLOYMENT_NAME"),
        (RunnerSettings(build_id="has space"), "LANDED_BUILD_ID"),
        (RunnerSettings(build_id=PLACEHOLDER_BUILD_ID), "placeholder"),
    ],
)
def test_a_bad_name_or_build_id_is_refused_before_connecting(
    settings: RunnerSettings, named: str
) -> None:
    with pytest.raises(VersioningError, match=named):
        role_version(settings)
    with pytest.raises(RoleError, match=named):
        check_settings(settings)


def test_landed_dev_runs_its_roles_unversioned(tmp_path: Path) -> None:
    stack = DevStack(home=tmp_path / ".landed", base_env={"PATH": "/usr/bin"})
    stack.server = DevServer(port=7233)  # not started: only its address is read
    for role in ("actor", "verifier", "runner"):
        env = stack.role_environment(role)
        assert env[f"LANDED_{role.upper()}_VERSIONING"] == "false", role
