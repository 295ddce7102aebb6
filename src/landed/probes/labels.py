"""Expectation labels: what every verdict says it checked, and which expectations are weak."""

from __future__ import annotations

from typing import Any

import regex

from landed.probes.contract import (
    AtLeast,
    Change,
    Contains,
    Count,
    DeploymentProbe,
    Equals,
    FileProbe,
    JsonPath,
    NonEmpty,
    PaymentProbe,
    Regex,
    RungAtLeast,
)
from landed.probes.values import REGEX_TIMEOUT_S, show

__all__ = ["claims_of", "is_weak", "label", "label_for"]


def label(expect: Any) -> str:
    """The label every verdict carries: count(45), contains("200"), non_empty (weak default)."""
    if isinstance(expect, Count):
        return f"count({expect.value})"
    if isinstance(expect, AtLeast):
        return f"at_least({expect.value})"
    if isinstance(expect, Change):
        return f"change({expect.value:+d})"
    if isinstance(expect, Contains):
        return f"contains({show(expect.value)})"
    if isinstance(expect, Equals):
        return f"equals({show(expect.value)})"
    if isinstance(expect, Regex):
        return f"regex({show(expect.value)})"
    if isinstance(expect, JsonPath):
        if expect.op == "exists":
            wanted = "exists" if expect.value is None or expect.value is True else "is absent"
            return f"json_path({expect.path} {wanted})"
        return f"json_path({expect.path} {expect.op} {show(expect.value)})"
    if isinstance(expect, RungAtLeast):
        return f"rung_at_least({expect.value})"
    if isinstance(expect, NonEmpty):
        return "non_empty (weak default)"
    raise TypeError(f"not an expectation: {type(expect).__name__}")


def claims_of(probe: Any) -> list[str]:
    """Typed fields a probe claims (a payment's amount, a file's sha256), checked on read."""
    claims: list[str] = []
    if isinstance(probe, PaymentProbe):
        for name in ("amount", "currency", "status"):
            value = getattr(probe, name)
            if value is not None:
                claims.append(f"{name}={show(value)}")
    elif isinstance(probe, DeploymentProbe):
        if probe.version is not None:
            claims.append(f"version={show(probe.version)}")
        if probe.sha256 is not None:
            claims.append(f"sha256={probe.sha256.lower()}")
    elif isinstance(probe, FileProbe):
        if probe.size is not None:
            claims.append(f"size={probe.size}")
        if probe.sha256 is not None:
            claims.append(f"sha256={probe.sha256.lower()}")
    return claims


def is_weak(probe: Any, expect: Any) -> bool:
    """Weak: any non-empty output would pass. non_empty with no typed claim beside it; so do
    a regex that an empty match satisfies (``.*``, ``x?``) and at_least of 0 or less on a
    count, which every count meets."""
    if claims_of(probe):
        return False
    if isinstance(expect, NonEmpty):
        return True
    if isinstance(expect, AtLeast):
        return expect.value <= 0
    if isinstance(expect, Regex):
        try:
            return regex.search(expect.value, "", timeout=REGEX_TIMEOUT_S) is not None
        except (TimeoutError, regex.error):
            return False
    return False


def label_for(probe: Any, expect: Any) -> str:
    claims = claims_of(probe)
    if not claims:
        return label(expect)
    head = f"{probe.kind}({', '.join(claims)})"
    return head if isinstance(expect, NonEmpty) else f"{head} and {label(expect)}"
