"""An act that fails with credentials in its error text: the tracing canary's act."""

from __future__ import annotations

from typing import Any

import landed


@landed.act("test.leaky_raise")
def leaky_raise(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """Raise ``spec["error"]`` (a RuntimeError) before writing anything."""
    raise RuntimeError(str(spec["error"]))
