"""Every side effect of an agent task: act adapters, verify, and the runner's plan and settle."""

from __future__ import annotations

__all__: list[str] = []
