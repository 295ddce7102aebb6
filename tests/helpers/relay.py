"""A worker on the queue the runner sends its reads to, in front of the real verifier: it asks
the verifier something other than the workflow asked (or forges, holds or slows the answer),
so the signature on what it hands back is genuine."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.worker import Worker

import landed
from helpers.agent_task import read_back
from helpers.roles import Roles, run_roles
from helpers.sor import rows_task
from landed.activities.verify import VerifyActivities
from landed.probes.contract import NonEmpty, Outcome, RecordProbe
from landed.probes.expect import label_for
from landed.probes.sources import SourceRegistry
from landed.signing import KeyPair
from landed.task.messages import VerifyInput, VerifyOutput
from landed.task.names import VERIFY_ACTIVITY
from landed.temporal.plugin import connect


class Relay(VerifyActivities):
    """Answers on a queue the runner sends reads to, and asks the real verifier (its key, its
    sources) something other than the workflow asked: the signature on the answer is genuine."""

    def __init__(
        self,
        mode: str,
        registry: SourceRegistry,
        identity: str,
        key: KeyPair,
        gate: Path | None = None,
    ) -> None:
        super().__init__(registry, identity, key)
        self._mode = mode
        self._gate = gate

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify(self, inp: VerifyInput) -> VerifyOutput:
        if self._mode in ("forged-before", "unsigned-before", "forged-reconcile"):
            return await self._forge(inp)
        if self._mode in ("stale-reconcile", "stale-norequest"):
            return await self._stale(inp)
        if self._mode in (
            "dressed-up",
            "swapped-before-outcome",
            "keyless-signature",
            "probe-error-cover",
        ):
            return await self._dress_up(inp)
        if self._mode == "slow-before" and inp.phase == "before":
            for _ in range(600):  # alive (heartbeating) until the task is cancelled
                activity.heartbeat()
                await asyncio.sleep(0.1)
        if self._mode == "held-after":
            # The read-back waits for the test's go, then is asked of the verifier as is.
            while inp.phase == "after" and not (self._gate and self._gate.exists()):
                activity.heartbeat()
                await asyncio.sleep(0.05)
            return await self._verify(inp)
        if self._mode == "no-before":
            inp = inp.model_copy(update={"before": [None] * len(inp.indexes)})
        elif self._mode == "other-before":  # the before-state of a probe that reads 0
            if inp.phase == "before":
                other = RecordProbe(source="rows-db", query="select count(*) from rows where 0")
                zero = [c.model_copy(update={"probe": other}) for c in inp.contracts]
                inp = inp.model_copy(update={"contracts": zero})
        else:  # an easier expectation than the plan's
            easier = [c.model_copy(update={"expect": NonEmpty()}) for c in inp.contracts]
            inp = inp.model_copy(update={"contracts": easier, "before": []})
        return await self._verify(inp)

    async def _dress_up(self, inp: VerifyInput) -> VerifyOutput:
        """The read-back, asked of the real verifier and handed back with its signature intact.

        ``dressed-up`` asks under an easier expectation without the before-state, then shows
        the plan step's expectation and before value in the reading beside the signed one;
        ``swapped-before-outcome`` hands the verifier the task's own before value with its
        outcome changed from pass to mismatch; ``keyless-signature`` drops the key id from the
        signature; ``probe-error-cover`` shows "nothing observed" beside the easier signed pass
        (a probe-error is not held to its step, and the proof is what the receipt keeps)."""
        if inp.phase != "after":
            return await self._verify(inp)
        if self._mode == "swapped-before-outcome":
            swapped = [
                b.model_copy(update={"outcome": Outcome.MISMATCH}) if b is not None else None
                for b in (inp.before or [])
            ]
            return await self._verify(inp.model_copy(update={"before": swapped}))
        if self._mode == "keyless-signature":
            out = await self._verify(inp)
            readings = []
            for r in out.readings:
                landed_ext = dict(r.proof.landed or {})
                signature = dict(landed_ext.get("signature") or {})
                signature.pop("key_id", None)
                landed_ext["signature"] = signature
                proof = r.proof.model_copy(update={"landed": landed_ext})
                readings.append(r.model_copy(update={"proof": proof}))
            return out.model_copy(update={"readings": readings})
        easier = [c.model_copy(update={"expect": NonEmpty()}) for c in inp.contracts]
        out = await self._verify(inp.model_copy(update={"contracts": easier, "before": []}))
        befores = inp.before or [None] * len(inp.indexes)
        dressed = []
        for r, contract, before in zip(out.readings, inp.contracts, befores, strict=True):
            shown = r.observation.model_copy(
                update={
                    "expectation": label_for(contract.probe, contract.expect),
                    "before_value": before.value if before is not None else None,
                }
            )
            if self._mode == "probe-error-cover":
                shown = shown.model_copy(update={"outcome": Outcome.PROBE_ERROR, "value": None})
            dressed.append(r.model_copy(update={"observation": shown}))  # the proof untouched
        return out.model_copy(update={"readings": dressed})

    async def _forge(self, inp: VerifyInput) -> VerifyOutput:
        """The real verifier's reading with its value changed to "nothing there" (0 rows): the
        pre-read (``*-before``) or the first reading after a failed act (``forged-reconcile``).
        ``forged-before`` keeps the genuine signature (over the genuine value); the others
        re-state the signed observation too, without a signature."""
        out = await self._verify(inp)
        target = "before" if self._mode.endswith("-before") else "after"
        if inp.phase != target or (target == "after" and inp.read != 1) or self._forged:
            return out
        self._forged = target == "after"  # the reconcile read only; later reads are genuine
        forged = []
        for reading in out.readings:
            obs = reading.observation.model_copy(update={"value": 0, "outcome": Outcome.EMPTY})
            landed_ext = dict(reading.proof.landed or {})
            if self._mode != "forged-before":
                landed_ext.pop("signature", None)
                landed_ext["observation"] = obs.model_dump(mode="json")
            proof = reading.proof.model_copy(update={"result": "empty", "landed": landed_ext})
            forged.append(reading.model_copy(update={"observation": obs, "proof": proof}))
        return out.model_copy(update={"readings": forged})

    _forged = False
    _early: VerifyOutput | None = None

    async def _stale(self, inp: VerifyInput) -> VerifyOutput:
        """During the pre-read, also get the real verifier's signed "after" reading of this run
        and attempt (nothing is there yet: empty), and hand it back as the reconcile read.
        ``stale-norequest`` asks for it with no request id, as an older verifier signed."""
        if inp.phase == "before":
            out = await self._verify(inp)
            update: dict[str, object] = {
                "phase": "after",
                "before": [r.observation for r in out.readings],
            }
            if self._mode == "stale-norequest":
                update["request"] = ""
            early = inp.model_copy(update=update)
            self._early = await self._verify(early)
            return out
        if self._early is not None and not self._forged:
            self._forged = True
            return self._early
        return await self._verify(inp)


@asynccontextmanager
async def relayed(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str, gate: Path | None = None
) -> AsyncIterator[Roles]:
    """The roles, with the runner's reads sent to a Relay(mode) in front of the verifier."""
    relay_queue = f"relay-{uuid.uuid4().hex[:8]}"
    sources = {"rows-db": {"url": f"sqlite:///{db}"}}
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources=sources,
        runner={"verifier_task_queue": relay_queue},
        check_roles=False,  # the relay answers reads only
    ) as roles:
        identity = roles.identities["verifier"]
        key = KeyPair.load(roles.public_key.with_suffix(".key"))
        relay = Relay(mode, SourceRegistry(sources, observer=identity), identity, key, gate)
        client = await connect(identity=identity, address=temporal_dev)
        async with Worker(client, task_queue=relay_queue, activities=[relay.verify]):
            yield roles


async def through_relay(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str, batch: str, expect: int, **act: Any
) -> tuple[landed.Receipt, str]:
    async with relayed(temporal_dev, tmp_path, db, mode) as roles:
        receipt = await roles.client.run(
            rows_task(f"relayed-{mode}", db, expect=expect, batch=batch, **act)
        )
    readings = read_back(receipt)
    return receipt, str((readings[0].landed or {}).get("observation")) if readings else ""
