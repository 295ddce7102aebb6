"""landed: an agent's "done" becomes a verdict only after the result is read back."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Type checkers and IDEs see every public name statically; at run time each is imported on
    # first use through __getattr__ below.
    from landed.governance.harness import HarnessUnavailable
    from landed.ledger.base import Ledger, LedgerConflict, LedgerError
    from landed.ledger.factory import open_ledger
    from landed.probes.contract import (
        AtLeast,
        CallLogProbe,
        Change,
        CommandProbe,
        Contains,
        Contract,
        Count,
        DeploymentProbe,
        Equals,
        Evidence,
        FileProbe,
        GitProbe,
        HttpProbe,
        JsonPath,
        NonEmpty,
        Observation,
        Outcome,
        PaymentProbe,
        ProviderObjectProbe,
        RecordProbe,
        Regex,
        RungAtLeast,
        SentLogProbe,
    )
    from landed.probes.gate import gate, verify
    from landed.probes.observe import observe
    from landed.probes.settings import SourceConfig
    from landed.probes.sources import SourceRegistry
    from landed.probes.verdict import (
        Duplicated,
        Empty,
        InvalidContract,
        Mismatch,
        NotLanded,
        ProbeFailed,
        Vacuous,
        Verdict,
    )
    from landed.receipts.grading import Finding, Grade, grade
    from landed.receipts.intake import InvalidLine, read_receipts
    from landed.receipts.ladder import (
        ARTIFACT_KINDS,
        CALL_LADDER,
        DONE_WORDS,
        MESSAGE_LADDER,
        READ_BACK_KINDS,
        CallRung,
        MessageRung,
        ProofLevel,
        Status,
        required_level,
    )
    from landed.receipts.model import (
        Approval,
        BusinessOutcome,
        Cost,
        LandedExtension,
        ProofItem,
        Receipt,
        SignedObservation,
    )
    from landed.receipts.scorecard import Scorecard
    from landed.signing import KeyPair, TrustStore, sign_proof, verify_proof
    from landed.task.acts import ActContext, act
    from landed.task.credentials import Credentials
    from landed.task.messages import ActReport
    from landed.task.spec import (
        ActSpec,
        ApprovalGate,
        ConsentGate,
        RetryBudget,
        StepTimeouts,
        TaskSpec,
        TaskSpecError,
    )
    from landed.task.validate import check_spec
    from landed.temporal.client import Client
    from landed.temporal.client_errors import (
        NamespaceNotReady,
        NotDone,
        RunnerNotAnswering,
        TaskIdReused,
        TaskNotSettled,
        TemporalUnreachable,
    )
    from landed.temporal.handle import TaskHandle, TaskStatus
    from landed.temporal.role_check import TaskRefused
    from landed.util.leave import run_main

# Public name -> the private module defining it. ``import landed`` stays cheap: no Temporal
# client, HTTP stack or pydantic model is built until a name is used, which keeps every CLI
# start (``landed verify`` and ``landed guard`` run from agent hooks) fast, and keeps the
# workflow sandbox, which re-executes this file for each workflow run, from paying for it.
_EXPORTS: dict[str, str] = {
    "ActContext": "landed.task.acts",
    "act": "landed.task.acts",
    "Client": "landed.temporal.client",
    "NotDone": "landed.temporal.client_errors",
    "RunnerNotAnswering": "landed.temporal.client_errors",
    "TemporalUnreachable": "landed.temporal.client_errors",
    "TaskHandle": "landed.temporal.handle",
    "TaskIdReused": "landed.temporal.client_errors",
    "TaskNotSettled": "landed.temporal.client_errors",
    "TaskRefused": "landed.temporal.role_check",
    "TaskStatus": "landed.temporal.handle",
    "NamespaceNotReady": "landed.temporal.client_errors",
    "AtLeast": "landed.probes.contract",
    "Change": "landed.probes.contract",
    "CallLogProbe": "landed.probes.contract",
    "CommandProbe": "landed.probes.contract",
    "Contains": "landed.probes.contract",
    "Contract": "landed.probes.contract",
    "Count": "landed.probes.contract",
    "DeploymentProbe": "landed.probes.contract",
    "Equals": "landed.probes.contract",
    "Evidence": "landed.probes.contract",
    "FileProbe": "landed.probes.contract",
    "GitProbe": "landed.probes.contract",
    "HttpProbe": "landed.probes.contract",
    "JsonPath": "landed.probes.contract",
    "NonEmpty": "landed.probes.contract",
    "Observation": "landed.probes.contract",
    "Outcome": "landed.probes.contract",
    "PaymentProbe": "landed.probes.contract",
    "ProviderObjectProbe": "landed.probes.contract",
    "RecordProbe": "landed.probes.contract",
    "Regex": "landed.probes.contract",
    "RungAtLeast": "landed.probes.contract",
    "SentLogProbe": "landed.probes.contract",
    "gate": "landed.probes.gate",
    "verify": "landed.probes.gate",
    "Finding": "landed.receipts.grading",
    "Grade": "landed.receipts.grading",
    "grade": "landed.receipts.grading",
    "InvalidLine": "landed.receipts.intake",
    "read_receipts": "landed.receipts.intake",
    "ARTIFACT_KINDS": "landed.receipts.ladder",
    "CALL_LADDER": "landed.receipts.ladder",
    "CallRung": "landed.receipts.ladder",
    "DONE_WORDS": "landed.receipts.ladder",
    "MESSAGE_LADDER": "landed.receipts.ladder",
    "MessageRung": "landed.receipts.ladder",
    "ProofLevel": "landed.receipts.ladder",
    "READ_BACK_KINDS": "landed.receipts.ladder",
    "Status": "landed.receipts.ladder",
    "required_level": "landed.receipts.ladder",
    "Ledger": "landed.ledger.base",
    "LedgerConflict": "landed.ledger.base",
    "LedgerError": "landed.ledger.base",
    "open_ledger": "landed.ledger.factory",
    "observe": "landed.probes.observe",
    "Approval": "landed.receipts.model",
    "BusinessOutcome": "landed.receipts.model",
    "Cost": "landed.receipts.model",
    "LandedExtension": "landed.receipts.model",
    "ProofItem": "landed.receipts.model",
    "Receipt": "landed.receipts.model",
    "SignedObservation": "landed.receipts.model",
    "Scorecard": "landed.receipts.scorecard",
    "KeyPair": "landed.signing",
    "TrustStore": "landed.signing",
    "sign_proof": "landed.signing",
    "verify_proof": "landed.signing",
    "SourceConfig": "landed.probes.settings",
    "SourceRegistry": "landed.probes.sources",
    "ActReport": "landed.task.messages",
    "ActSpec": "landed.task.spec",
    "ApprovalGate": "landed.task.spec",
    "ConsentGate": "landed.task.spec",
    "RetryBudget": "landed.task.spec",
    "StepTimeouts": "landed.task.spec",
    "TaskSpec": "landed.task.spec",
    "TaskSpecError": "landed.task.spec",
    "check_spec": "landed.task.validate",
    "Duplicated": "landed.probes.verdict",
    "Empty": "landed.probes.verdict",
    "InvalidContract": "landed.probes.verdict",
    "Mismatch": "landed.probes.verdict",
    "NotLanded": "landed.probes.verdict",
    "ProbeFailed": "landed.probes.verdict",
    "Vacuous": "landed.probes.verdict",
    "Verdict": "landed.probes.verdict",
    # --- fleet (GOV-10) ---
    "HarnessUnavailable": "landed.governance.harness",
    # --- scripts ---
    "run_main": "landed.util.leave",
    "Credentials": "landed.task.credentials",
}


__all__ = [
    "ARTIFACT_KINDS",
    "CALL_LADDER",
    "DONE_WORDS",
    "MESSAGE_LADDER",
    "READ_BACK_KINDS",
    "ActContext",
    "ActReport",
    "ActSpec",
    "Approval",
    "ApprovalGate",
    "AtLeast",
    "BusinessOutcome",
    "CallLogProbe",
    "CallRung",
    "Change",
    "Client",
    "CommandProbe",
    "ConsentGate",
    "Contains",
    "Contract",
    "Cost",
    "Count",
    "Credentials",
    "DeploymentProbe",
    "Duplicated",
    "Empty",
    "Equals",
    "Evidence",
    "FileProbe",
    "Finding",
    "GitProbe",
    "Grade",
    "HarnessUnavailable",
    "HttpProbe",
    "InvalidContract",
    "InvalidLine",
    "JsonPath",
    "KeyPair",
    "LandedExtension",
    "Ledger",
    "LedgerConflict",
    "LedgerError",
    "MessageRung",
    "Mismatch",
    "NamespaceNotReady",
    "NonEmpty",
    "NotDone",
    "NotLanded",
    "Observation",
    "Outcome",
    "PaymentProbe",
    "ProbeFailed",
    "ProofItem",
    "ProofLevel",
    "ProviderObjectProbe",
    "Receipt",
    "RecordProbe",
    "Regex",
    "RetryBudget",
    "RungAtLeast",
    "RunnerNotAnswering",
    "Scorecard",
    "SentLogProbe",
    "SignedObservation",
    "SourceConfig",
    "SourceRegistry",
    "Status",
    "StepTimeouts",
    "TaskHandle",
    "TaskIdReused",
    "TaskNotSettled",
    "TaskRefused",
    "TaskSpec",
    "TaskSpecError",
    "TaskStatus",
    "TemporalUnreachable",
    "TrustStore",
    "Vacuous",
    "Verdict",
    "act",
    "check_spec",
    "gate",
    "grade",
    "observe",
    "open_ledger",
    "read_receipts",
    "required_level",
    "run_main",
    "sign_proof",
    "verify",
    "verify_proof",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'landed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
