"""Deterministic orchestration: the AgentTask workflow and nothing with side effects."""

from __future__ import annotations

__all__: list[str] = []
