"""landed.toml under ``landed dev``: split into each role's part, the actor's and runner's
tables as their variables, the verifier's part copied so it reads back the same, and which
roles a change concerns (the decision ``--reload`` restarts by)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from landed.dev.server import DevError
from landed.dev.settings_file import changed_parts, read_parts, role_variables, write_toml
from landed.temporal.settings import ActorSettings, RunnerSettings

TOML = """\
observer = "verifier:me"

[sources.shop_db]
url = "sqlite:///shop.db"
allowed_commands = ["git status", "ls *"]

[actor]
acts = ["shop_acts"]
credentials = { "shop-db" = "sqlite:///shop.db" }

[runner]
time_cap = "PT10M"
pre_read = false
"""


def test_each_role_gets_its_own_part(tmp_path: Path) -> None:
    (tmp_path / "landed.toml").write_text(TOML)
    parts = read_parts(tmp_path / "landed.toml")
    assert set(parts["verifier"]) == {"observer", "sources"}
    assert parts["actor"]["acts"] == ["shop_acts"] and "time_cap" in parts["runner"]
    variables = role_variables("actor", parts["actor"])
    assert set(variables) == {"LANDED_ACTOR_ACTS", "LANDED_ACTOR_CREDENTIALS"}
    runner = role_variables("runner", parts["runner"])
    assert runner == {"LANDED_RUNNER_TIME_CAP": "PT10M", "LANDED_RUNNER_PRE_READ": "false"}


def test_the_variables_are_what_the_roles_settings_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "landed.toml").write_text(TOML)
    parts = read_parts(tmp_path / "landed.toml")
    for role in ("actor", "runner"):
        for name, value in role_variables(role, parts[role]).items():
            monkeypatch.setenv(name, value)
    actor, runner = ActorSettings(), RunnerSettings()
    assert actor.acts == ["shop_acts"] and actor.credentials == {"shop-db": "sqlite:///shop.db"}
    assert runner.pre_read is False and runner.time_cap is not None
    assert runner.time_cap.total_seconds() == 600


def test_the_verifiers_copy_reads_back_the_same(tmp_path: Path) -> None:
    (tmp_path / "landed.toml").write_text(TOML + '\n[sources.odd]\nurl = "x\\"y\\u00e9"\n')
    part = read_parts(tmp_path / "landed.toml")["verifier"]
    copy = write_toml(part, tmp_path / "copy.toml")
    assert tomllib.loads(copy.read_text()) == part
    assert copy.stat().st_mode & 0o077 == 0


def test_a_change_names_the_roles_and_keys_it_concerns() -> None:
    old = {"verifier": {"sources": {"a": {"url": "x"}}}, "actor": {"acts": ["m"]}, "runner": {}}
    new = {
        "verifier": {"sources": {"a": {"url": "x"}, "b": {"url": "y"}}},
        "actor": {"acts": ["m"]},
        "runner": {"time_cap": "PT1M"},
    }
    assert changed_parts(old, new) == {"verifier": ["sources.b"], "runner": ["time_cap"]}
    assert changed_parts(new, new) == {}
    moved = {**old, "actor": {"acts": ["m", "n"], "credentials": {"k": "v"}}}
    assert changed_parts(old, moved) == {"actor": ["acts", "credentials"]}


def test_a_file_that_does_not_read_names_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "landed.toml"
    bad.write_text("[sources\n")
    with pytest.raises(DevError, match="fix the file"):
        read_parts(bad)
    bad.write_text('actor = "x"\n')
    with pytest.raises(DevError, match=r"\[actor\]"):
        read_parts(bad)
