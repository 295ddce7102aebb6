"""The exporter's settings: LANDED_EXPORTER__* in the environment, or the command's flags."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

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
    max_pages_per_scrape: int = Field(
        default=5, ge=1, description="Pages of 2,000 rows read per scrape after the catch-up."
    )
