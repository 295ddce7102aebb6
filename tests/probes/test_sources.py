"""The source registry: names resolve from the verifier's own configuration, never the probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from landed.probes.contract import CommandProbe, Count, Outcome, RecordProbe
from landed.probes.observe import observe
from landed.probes.reading import ProbeError
from landed.probes.settings import ConfigError, LandedSettings, SourceConfig, canonical_name
from landed.probes.sources import SourceRegistry, load_registry


def test_kind_is_inferred_from_the_url_scheme() -> None:
    assert SourceConfig(url="postgresql://u@h/db").kind == "sql"
    assert SourceConfig(url="sqlite:////tmp/x.db").kind == "sql"
    assert SourceConfig(url="https://api.example").kind == "http"
    assert SourceConfig(kind="file", path="/srv").kind == "file"
    with pytest.raises(ValueError, match="needs a kind"):
        SourceConfig(path="/srv")


def test_a_probe_cannot_carry_a_dsn_or_token() -> None:
    with pytest.raises(ValueError, match="Extra inputs"):
        RecordProbe.model_validate({"source": "db", "query": "select 1", "dsn": "postgresql://x"})
    with pytest.raises(ValueError, match="Extra inputs"):
        RecordProbe.model_validate({"source": "db", "query": "select 1", "token": "t"})


def test_names_match_across_dash_underscore_and_case() -> None:
    registry = SourceRegistry({"orders-db": {"url": "sqlite:///x.db"}})
    assert registry.get("ORDERS_DB").kind == "sql"
    assert canonical_name("Orders-DB") == "orders_db"


def test_unknown_source_names_the_config_key_to_add() -> None:
    registry = SourceRegistry({"site": {"url": "http://127.0.0.1:1"}})
    with pytest.raises(ProbeError) as err:
        registry.get("orders-db")
    message = str(err.value)
    assert "LANDED_SOURCES__ORDERS_DB__URL" in message
    assert "[sources.orders-db]" in message
    assert "site" in message


async def test_unknown_source_is_a_probe_error_observation() -> None:
    async with SourceRegistry({}) as registry:
        obs = await observe(
            RecordProbe(source="orders-db", query="select 1"),
            Count(value=1),
            registry=registry,
            observer="t",
        )
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "LANDED_SOURCES__ORDERS_DB__URL" in obs.message


async def test_a_source_of_the_wrong_kind_is_refused() -> None:
    async with SourceRegistry({"site": {"url": "http://127.0.0.1:1"}}) as registry:
        obs = await observe(
            RecordProbe(source="site", query="select 1"),
            Count(value=1),
            registry=registry,
            observer="t",
        )
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "http source" in obs.message


async def test_unsourced_probes_can_be_switched_off() -> None:
    async with SourceRegistry({}, allow_unsourced=False) as registry:
        obs = await observe(
            CommandProbe(argv=["echo", "1"]), Count(value=1), registry=registry, observer="t"
        )
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "allow_unsourced" in obs.message


def test_settings_from_nested_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANDED_SOURCES__ORDERS_DB__URL", "postgresql://reader:pw-1234@db/orders")
    monkeypatch.setenv("LANDED_SOURCES__SITE__URL", "https://example.test")
    monkeypatch.setenv("LANDED_SOURCES__SITE__TOKEN", "tok-abcdef")
    monkeypatch.setenv("LANDED_OBSERVER", "verifier-7")
    registry = SourceRegistry.from_settings()
    assert registry.names() == ["orders_db", "site"]
    assert registry.get("orders-db").kind == "sql"
    assert registry.observer == "verifier-7"
    assert registry.redactor("pw-1234 and tok-abcdef") == "[redacted] and [redacted]"


def test_settings_from_json_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANDED_SOURCES", '{"mail-provider": {"url": "http://127.0.0.1:9"}}')
    assert SourceRegistry.from_settings().get("mail-provider").kind == "http"


def test_settings_from_landed_toml_with_env_winning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "landed.toml").write_text(
        '[sources.orders-db]\nurl = "sqlite:///from-toml.db"\n\n'
        '[sources.repo]\nkind = "git"\npath = "/srv/repo"\n'
    )
    monkeypatch.chdir(tmp_path)
    assert LandedSettings().sources["orders_db"].url == "sqlite:///from-toml.db"
    monkeypatch.setenv("LANDED_SOURCES__ORDERS_DB__URL", "sqlite:///from-env.db")
    settings = LandedSettings()
    assert settings.sources["orders_db"].url == "sqlite:///from-env.db"
    assert settings.sources["repo"].kind == "git"


def test_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_registry(config_file=str(tmp_path / "missing.toml"))


def test_bad_configuration_errors_never_echo_values(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANDED_SOURCES__X__URL", "ftp://user:hunter2-secret@host/")
    with pytest.raises(ConfigError) as err:
        load_registry()
    assert "hunter2-secret" not in str(err.value)
    assert "sources" in str(err.value)


def test_secrets_collected_from_every_credential_field() -> None:
    cfg = SourceConfig(
        url="postgresql://u:dsn-pass@h/db?password=q-pass",
        kind="sql",
        headers={"X-Api-Key": "hdr-secret"},
        token="tok-secret",
        env={"PGPASSWORD": "env-secret"},
    )
    assert set(cfg.secrets()) >= {"dsn-pass", "q-pass", "hdr-secret", "tok-secret", "env-secret"}
    assert "tok-secret" not in repr(cfg)


@pytest.mark.parametrize("kind", ["file", "git", "command", "sql"])
def test_a_source_path_under_the_home_directory_is_expanded_for_every_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert SourceConfig(kind=kind, path="~/data").path == str(tmp_path / "data")
    # Only ~ and ~/ mean the home directory: ./~/x is a folder named ~, ~x a file name.
    assert SourceConfig(kind=kind, path="./~/data").path == "./~/data"
    assert SourceConfig(kind=kind, path="~data").path == "~data"
