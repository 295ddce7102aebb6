"""The ledger's head positions as gauges: a decrease is a ledger cut back to an earlier state.

``landed_ledger_head_position`` is the position of the chain's last row;
``landed_ledger_last_signed_position`` that of the latest signed head whose signature verifies
against a runner head key the exporter trusts (LANDED_EXPORTER__HEAD_KEYS). Fail closed:
without a trusted key the second gauge is absent (a head nobody checked is no signed head), and
so are both while the ledger's heads cannot be read (landed_ledger_up says why).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from landed.ledger.base import LedgerError
from landed.ledger.factory import read_heads

__all__ = ["HEADS_READ", "HeadsCollector"]

#: Signed heads read per scrape, latest first, in search of one the trusted key signed.
HEADS_READ = 50
log = logging.getLogger("landed.telemetry")


class HeadsCollector(Collector):
    """``read`` at each scrape; ``version`` changes whenever a figure does."""

    def __init__(self, url: str, trust: Mapping[str, Ed25519PublicKey] | None) -> None:
        self._url = url
        self._trust = trust
        self.head: int | None = None
        self.signed: int | None = None

    @property
    def version(self) -> tuple[int | None, int | None]:
        return (self.head, self.signed)

    async def read(self) -> None:
        try:
            head, heads = await read_heads(self._url, HEADS_READ)
        except LedgerError as exc:
            if self.head is not None:
                log.warning("landed exporter: the ledger's chain head could not be read: %s", exc)
            self.head = self.signed = None
            return
        self.head = head
        if self._trust is None:
            return
        trust = self._trust
        self.signed = next(
            (h.pos for h in heads if h.key_id in trust and h.signature_ok(trust[h.key_id])), 0
        )

    def collect(self) -> Iterator[Metric]:
        if self.head is not None:
            yield GaugeMetricFamily(
                "landed_ledger_head_position",
                "Position of the last row of the ledger's hash chain (a decrease: cut back).",
                value=self.head,
            )
        if self.signed is not None:
            yield GaugeMetricFamily(
                "landed_ledger_last_signed_position",
                "Position of the latest chain head signed by the trusted runner head key "
                f"(0: none of the latest {HEADS_READ} heads).",
                value=self.signed,
            )
