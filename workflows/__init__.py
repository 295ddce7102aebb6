"""Deterministic orchestration only: the AgentTask and ReceiptLookup workflows."""

from __future__ import annotations

__all__: list[str] = []
