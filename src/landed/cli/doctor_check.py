"""One finding of ``landed doctor``: a check's name, whether it passed, what it saw and the fix."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from typing import TypeVar

__all__ = ["Check", "bounded", "first_line"]

T = TypeVar("T")


@dataclass(frozen=True)
class Check:
    """``ok`` with what was seen, or a problem with the fix to make (``fix`` is then set)."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    @classmethod
    def passed(cls, name: str, detail: str) -> Check:
        return cls(name, True, detail)

    @classmethod
    def problem(cls, name: str, detail: str, fix: str) -> Check:
        return cls(name, False, detail, fix)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


async def bounded(awaitable: Awaitable[T], timeout: float, what: str) -> T:
    """``awaitable``'s result within ``timeout`` seconds; past it, TimeoutError naming ``what``
    (a server that never answers must not hold the doctor up)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise TimeoutError(f"{what} did not answer within {timeout:g}s") from None


def first_line(exc: BaseException) -> str:
    """An error's first line (a server's reason can run to pages), else its type's name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
