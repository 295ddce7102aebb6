"""The exporter's settings: LANDED_EXPORTER__* in the environment, or the command's flags."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from landed.ledger.chain import DEFAULT_FOREIGN_AFTER_S
from landed.signing import TrustStore

__all__ = ["DEFAULT_EXPORTER_PORT", "ExporterSettings"]

DEFAULT_EXPORTER_PORT = 9464


class ExporterSettings(BaseSettings):
    """Where the exporter listens, which ledger it reads, and its bounds."""

    model_config = SettingsConfigDict(env_prefix="LANDED_EXPORTER__", extra="ignore")

    ledger_url: str | None = Field(
        default=None, description="The ledger to read (default: LANDED_LEDGER_URL, then .landed)."
    )
    host: str = Field(default="127.0.0.1", description="Address to bind; loopback by default.")
    port: int = Field(default=DEFAULT_EXPORTER_PORT, ge=0, le=65535, description="0: a free port.")
    max_label_values: int = Field(
        default=100,
        ge=1,
        description="Distinct owners (and loops, and probe kinds) named before others fold "
        "into 'other'.",
    )
    claim_lag_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How old a claim is before it is counted as started: PostgreSQL can commit "
        "a claim below one already read, and has this long to.",
    )
    recent: int = Field(default=20, ge=1, le=500, description="Settled tasks shown on the page.")
    temporal_ui: str = Field(
        default="http://127.0.0.1:8233", description="The Temporal Web UI the page links to."
    )
    namespace: str = Field(default="default", description="The Temporal namespace of the tasks.")
    head_keys: list[Path] = Field(
        default_factory=list,
        description="The runner's head public key(s) (.pub files or folders): rows no signed "
        "head vouches for are counted as landed_ledger_foreign_rows.",
    )
    foreign_after: float = Field(
        default=DEFAULT_FOREIGN_AFTER_S,
        ge=0,
        description="Seconds after which a row no trusted head vouches for is foreign.",
    )
    max_pages_per_scrape: int = Field(
        default=5, ge=1, description="Pages of 2,000 rows read per scrape after the catch-up."
    )

    use_state: bool = Field(
        default=True,
        description="Save the sums and cursors to the state file and resume from it at start "
        "(false: read the whole ledger at every start, save nothing).",
    )
    state_path: Path | None = Field(
        default=None,
        description="The state file (default: beside a SQLite ledger, <file>.exporter-state.json;"
        " .landed/exporter-state-<id>.json for PostgreSQL).",
    )
    state_every_seconds: float = Field(
        default=60.0, ge=1, description="Seconds between two saves of the state (and at stop)."
    )

    def head_trust(self) -> dict[str, Ed25519PublicKey] | None:
        """The head keys to trust, loaded (None: check the links alone)."""
        return dict(TrustStore.load(self.head_keys)) if self.head_keys else None
