"""The verifier's settings: each named source's configuration, read from the ``LANDED_*``
environment and ``landed.toml``, and how a bad configuration is reported."""

from __future__ import annotations

import getpass
import os
import re
import shlex
import socket
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from landed.util import strictjson
from landed.util.paths import expand_home

# landed.toml names sources; one larger than this is not one (or is a device).
_MAX_CONFIG_BYTES = 1 << 20

__all__ = [
    "ConfigError",
    "LandedSettings",
    "SourceConfig",
    "SourceKind",
    "canonical_name",
    "command_words",
    "config_key",
    "default_observer",
    "settings_problems",
]

SourceKind = Literal["sql", "http", "file", "git", "command"]

_SCHEME_KIND: dict[str, SourceKind] = {
    "postgres": "sql",
    "postgresql": "sql",
    "sqlite": "sql",
    "http": "http",
    "https": "http",
}


def canonical_name(name: str) -> str:
    """Source names compare case-insensitively with ``-`` and ``_`` alike, because environment
    variable names cannot hold ``-``: ``orders-db`` is ``LANDED_SOURCES__ORDERS_DB__*``."""
    return name.strip().lower().replace("-", "_")


def config_key(name: str) -> str:
    """The environment variable prefix that configures source ``name``."""
    return f"LANDED_SOURCES__{canonical_name(name).upper()}__"


_ANY_MORE = re.compile(r"(?:^|\s)\*\s*$")


def command_words(entry: str) -> tuple[list[str], bool]:
    """The argv words of one allowed-command entry, and whether it ends in a bare ``*`` (any
    words may follow); a quoted or escaped star is a literal argument. ValueError says what is
    wrong with an entry without quoting it (settings errors name fields, never values)."""
    try:
        words = shlex.split(entry)
    except ValueError as exc:
        raise ValueError(f"an allowed command cannot be split into words ({exc})") from None
    anything = bool(words) and words[-1] == "*" and _ANY_MORE.search(entry) is not None
    if anything:
        words = words[:-1]
    if not words:
        raise ValueError("an allowed command names no program")
    return words, anything


class SourceConfig(BaseModel):
    """One system of record as the verifier reaches it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SourceKind | None = Field(
        default=None, description="sql, http, file, git or command; inferred from url's scheme."
    )
    url: str | None = Field(
        default=None,
        description="sql: postgresql://... or sqlite:///relative.db / sqlite:////abs.db; "
        "http: the base URL probes are relative to.",
    )
    path: str | None = Field(
        default=None,
        description="file: the root; git: the repository; command: working dir; "
        "sql: a SQLite file.",
    )
    token: SecretStr | None = Field(default=None, description="http: sent as a Bearer token.")

    @field_validator("path")
    @classmethod
    def _home(cls, value: str | None) -> str | None:
        # ~/ is the home directory for every kind (a file root, a repository, a command's
        # working directory, a SQLite file), as it is for the ledger; the policy and the
        # probes then see the same, real path.
        return None if value is None else expand_home(value)

    headers: dict[str, SecretStr] = Field(default_factory=dict, description="http headers.")
    env: dict[str, SecretStr] = Field(
        default_factory=dict, description="command and git: environment given to the process."
    )
    allow_absolute_urls: bool = Field(
        default=False,
        description="http: accept absolute URLs in probes (no credentials sent to another origin).",
    )
    commands: list[str] = Field(
        default_factory=list,
        description="command: the commands (space-separated words) the verifier worker may "
        "run for a task's command probe, each exactly as listed, e.g. 'git status'; an entry "
        "ending in ' *' lets the task add any words after it ('git log *'), options included; "
        "shell strings never match.",
    )
    allow_any_command: bool = Field(
        default=False,
        description="command: let the verifier worker run any command a task names through this "
        "source, shell strings included (the task then runs code as the verifier).",
    )
    follow_redirects: bool = Field(
        default=False,
        description="http: follow redirects, each only where a probe URL could point (under "
        "the base, or anywhere with allow_absolute_urls; credentials only under the base).",
    )
    verify_tls: bool = True
    max_timeout_s: float = Field(default=120.0, gt=0, description="Caps a probe's timeout_s.")
    pool_size: int = Field(
        default=10, ge=1, description="sql (PostgreSQL): pool max size; http: connections."
    )

    @model_validator(mode="after")
    def _check_commands(self) -> SourceConfig:
        for entry in self.commands:
            command_words(entry)
        return self

    @model_validator(mode="after")
    def _infer_kind(self) -> SourceConfig:
        if self.kind is None:
            scheme = urlsplit(self.url).scheme.lower() if self.url else ""
            kind = _SCHEME_KIND.get(scheme)
            if kind is None:
                raise ValueError(
                    "a source needs a kind (sql, http, file, git or command) or a url whose "
                    "scheme names one (postgresql://, sqlite:///, http(s)://)"
                )
            object.__setattr__(self, "kind", kind)
        return self

    def secrets(self) -> list[str]:
        """Every credential value this source holds, for redaction."""
        found: list[str] = []
        if self.token is not None:
            found.append(self.token.get_secret_value())
        found.extend(v.get_secret_value() for v in self.headers.values())
        found.extend(v.get_secret_value() for v in self.env.values())
        if self.url:
            parts = urlsplit(self.url)
            if parts.password:
                found.append(parts.password)
            elif parts.username and parts.scheme.lower() in ("http", "https"):
                # An API key given as the user name, no password (Stripe's `-u sk_...:`): sent as
                # Basic auth, so it is the credential.
                found.append(unquote(parts.username))
            found.extend(m.group(1) for m in re.finditer(r"(?i)password=([^\s&;]+)", self.url))
        return found

    def auth_headers(self) -> dict[str, str]:
        headers = {k: v.get_secret_value() for k, v in self.headers.items()}
        if self.token is not None:
            headers.setdefault("Authorization", f"Bearer {self.token.get_secret_value()}")
        return headers


def _normalise(data: dict[str, Any]) -> dict[str, Any]:
    sources = data.get("sources")
    if isinstance(sources, Mapping):
        data = {**data, "sources": {canonical_name(str(k)): v for k, v in sources.items()}}
    return data


class _Normalised(PydanticBaseSettingsSource):
    """Wraps a settings source so source names from every origin merge under one spelling."""

    def __init__(self, settings_cls: type[BaseSettings], inner: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self._inner = inner

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return _normalise(self._inner())


class _TomlFile(PydanticBaseSettingsSource):
    """``landed.toml`` (or LANDED_CONFIG_FILE / config_file=...), read with tomllib."""

    def __init__(self, settings_cls: type[BaseSettings], explicit: str | None):
        super().__init__(settings_cls)
        self._explicit = explicit or os.environ.get("LANDED_CONFIG_FILE")

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = Path(self._explicit) if self._explicit else Path("landed.toml")
        if not path.is_file():
            if self._explicit:
                raise ValueError(
                    f"the config file {path} does not exist; create it or fix the path"
                )
            return {}
        try:
            text = strictjson.read_at_most(path, _MAX_CONFIG_BYTES, f"the config file {path}")
            data = tomllib.loads(text.decode("utf-8"))
        except (strictjson.TooLarge, UnicodeDecodeError) as exc:
            raise ValueError(f"{exc}; landed.toml is a small TOML file of sources") from None
        data = data.get("landed", data) if isinstance(data.get("landed"), dict) else data
        return _normalise({k: v for k, v in data.items() if k != "config_file"})


class LandedSettings(BaseSettings):
    """The verifier's configuration: ``LANDED_*`` environment, then ``landed.toml``."""

    model_config = SettingsConfigDict(
        env_prefix="LANDED_", env_nested_delimiter="__", extra="ignore", frozen=True
    )

    sources: dict[str, SourceConfig] = Field(default_factory=dict)
    observer: str | None = Field(default=None, description="Who observes (the verifier's name).")
    allow_unsourced: bool = Field(
        default=False,
        description="Allow probes without a source (absolute URLs, local files and commands). "
        "Off by default: a probe then reads only configured sources. The CLI's own "
        "`landed verify` and `landed guard` run with the user's authority and allow them.",
    )
    config_file: str | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        explicit = getattr(init_settings, "init_kwargs", {}).get("config_file")
        return (
            _Normalised(settings_cls, init_settings),
            _Normalised(settings_cls, env_settings),
            _TomlFile(settings_cls, explicit),
        )


def default_observer(role: str = "landed") -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no user name in a minimal container: the uid still identifies
        user = str(os.getuid())
    return f"{role}:{user}@{socket.gethostname()}"


def settings_problems(exc: ValidationError) -> str:
    """A settings error as field names and what is wrong with each, never the values given
    (a URL or a token there may be a credential)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)
    )


class ConfigError(Exception):
    """The verifier's configuration cannot be loaded; the message names where and what."""
