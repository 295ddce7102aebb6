"""``python -m landed``: the same CLI as the ``landed`` command (used to start worker roles)."""

from __future__ import annotations

from landed.cli import main

__all__: list[str] = []

main()
