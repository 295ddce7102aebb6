"""The verify activity: read each probe back from its system of record, then sign what was seen."""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity
from temporalio.exceptions import ApplicationError

from landed.probes.contract import Contract, Observation, Outcome
from landed.probes.expect import label_for
from landed.probes.observe import observe
from landed.probes.policy import verifier_refusal
from landed.probes.sources import SourceRegistry
from landed.receipts.model import ProofItem
from landed.signing import KeyPair, sign_proof
from landed.task.assemble import proof_item
from landed.task.claims_in import claim_of
from landed.task.durability import recheck_of
from landed.task.messages import VerifyInput, VerifyOutput, VerifyReading
from landed.task.names import VERIFY_ACTIVITY
from landed.telemetry.logs import current_trace_id, task_event
from landed.telemetry.spans import note_reading, reading_span

from ._heartbeat import heartbeating

__all__ = ["VerifyActivities"]


class VerifyActivities:
    """The verifier's side: its own source credentials (registry), identity and signing key."""

    def __init__(self, registry: SourceRegistry, identity: str, key: KeyPair | None) -> None:
        self._registry = registry
        # Every probe this worker runs was written by a task: enter no cwd through a symlink.
        registry.task_probes = True
        self._identity = identity
        self._key = key

    def _refused(self, contract: Contract, why: str) -> Observation:
        """A probe this verifier's configuration does not allow: nothing was observed."""
        return Observation(
            outcome=Outcome.PROBE_ERROR,
            expectation=label_for(contract.probe, contract.expect),
            kind=contract.probe.kind,
            source=getattr(contract.probe, "source", None),
            observer=self._identity,
            observed_at=datetime.now(UTC),
            duration_ms=0.0,
            message=self._registry.redactor(why),
        )

    async def _observe(
        self, contract: Contract, before: Observation | None, meaning: int
    ) -> Observation:
        try:
            return await observe(
                contract.probe,
                contract.expect,
                registry=self._registry,
                observer=self._identity,
                before=before,
                meaning=meaning,
            )
        except Exception as exc:
            # observe() raises only for a declaration it cannot judge (or a before reading of
            # another probe): nothing was observed, which is never a pass.
            return Observation(
                outcome=Outcome.PROBE_ERROR,
                expectation=label_for(contract.probe, contract.expect),
                kind=contract.probe.kind,
                source=getattr(contract.probe, "source", None),
                observer=self._identity,
                observed_at=datetime.now(UTC),
                duration_ms=0.0,
                message=f"not observed: {type(exc).__name__}: {exc}",
            )

    def _sign(
        self, inp: VerifyInput, item: ProofItem, observation: Observation, index: int
    ) -> ProofItem:
        assert self._key is not None
        signed = sign_proof(
            self._key,
            task_id=inp.task_id,
            attempt=inp.attempt,
            proof=item,
            observation=observation,
            phase=inp.phase,
            run_id=inp.run_id,
            request=inp.request,
            step=index if inp.steps is not None else None,
            steps=inp.steps,
        )
        trace = current_trace_id()
        if trace is None:
            return signed
        # Outside what is signed: a link from the exporter's probe histogram (an exemplar) to
        # this reading's trace, never a part of the proof.
        return signed.model_copy(update={"landed": {**(signed.landed or {}), "trace_id": trace}})

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify(self, inp: VerifyInput) -> VerifyOutput:
        """Observe every requested plan step; a probe that fails observes ``probe-error``."""
        asker = activity.info().workflow_id
        # The task's recheck (landed.task.durability) reads the same plan for the same task.
        # So does a VerifyClaim of the task (a claim from an agent acting outside Temporal).
        # (An activity started outside any workflow has no asker: refused like a foreign one.)
        if asker is None or (
            asker != inp.task_id
            and not recheck_of(asker, inp.task_id)
            and not claim_of(asker, inp.task_id)
        ):
            # A task's workflow has the task's id: a reading signed for another task id would
            # be a proof for a task the asker is not (an agent's own workflow on the queue).
            raise ApplicationError(
                f"workflow {asker!r} asked for readings of task {inp.task_id!r}; the verifier "
                "signs readings only for the workflow of that task",
                type="ForeignTask",
                non_retryable=True,
            )
        async with heartbeating():
            return await self._verify(inp)

    async def _verify(self, inp: VerifyInput) -> VerifyOutput:
        readings: list[VerifyReading] = []
        befores = inp.before or [None] * len(inp.indexes)
        for index, contract, before in zip(inp.indexes, inp.contracts, befores, strict=True):
            prior = before if inp.phase == "after" else None
            # The task supplied this probe; the verifier runs only what its own configuration
            # allows (a task's command could otherwise read the signing key from this process).
            why = verifier_refusal(contract.probe, self._registry)
            with reading_span(inp.task_id, inp.attempt, inp.phase, index) as span:
                if why is not None:
                    observation = self._refused(contract, why)
                else:
                    observation = await self._observe(contract, prior, inp.meaning)
                note_reading(span, observation, refused=why is not None)
            item = proof_item(contract, observation, checked_by=self._identity, before=prior)
            if self._key is not None:
                try:
                    item = self._sign(inp, item, observation, index)
                except TypeError as exc:
                    # orjson's canonical form holds integers of 64 bits at most: a reading of a
                    # longer one cannot be signed, so it proves nothing. Said so, and signed.
                    observation = self._refused(
                        contract,
                        f"not observed: the reading holds a value that cannot be signed ({exc}); "
                        "select it as text in the probe",
                    )
                    item = proof_item(contract, observation, checked_by=self._identity)
                    item = self._sign(inp, item, observation, index)
            readings.append(
                VerifyReading(
                    index=index, observation=observation, proof=item, refused=why is not None
                )
            )
        task_event(
            "read",
            role="verifier",
            task_id=inp.task_id,
            attempt=inp.attempt,
            phase=inp.phase,
            outcomes=[r.observation.outcome.value for r in readings],
        )
        return VerifyOutput(
            verifier=self._identity,
            key_id=self._key.key_id if self._key is not None else None,
            readings=readings,
        )
