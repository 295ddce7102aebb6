"""landed: an agent's "done" becomes a verdict only after the result is read back."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Type checkers and IDEs see every public name statically; at run time each is imported on
    # first use through __getattr__ below.
    from landed._acts import ActContext, act
    from landed._client import (
        Client,
        NamespaceNotReady,
        RunnerNotAnswering,
        TaskHandle,
        TaskIdReused,
        TaskNotSettled,
        TaskStatus,
    )
    from landed._contract import (
        AtLeast,
        CallLogProbe,
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
    from landed._gate import gate, verify
    from landed._grading import Finding, Grade, grade
    from landed._intake import InvalidLine, read_receipts
    from landed._ladder import (
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
    from landed._ledger import Ledger, LedgerConflict, LedgerError, open_ledger
    from landed._observe import observe
    from landed._receipt import (
        Approval,
        BusinessOutcome,
        Cost,
        LandedExtension,
        ProofItem,
        Receipt,
        SignedObservation,
    )
    from landed._scorecard import Scorecard
    from landed._signing import KeyPair, TrustStore, sign_proof, verify_proof
    from landed._sources import SourceConfig, SourceRegistry
    from landed._task import (
        ActReport,
        ActSpec,
        ApprovalGate,
        ConsentGate,
        RetryBudget,
        StepTimeouts,
        TaskSpec,
        TaskSpecError,
        check_spec,
    )
    from landed._verdict import (
        Duplicated,
        Empty,
        InvalidContract,
        Mismatch,
        NotLanded,
        ProbeFailed,
        Vacuous,
        Verdict,
    )

# Public name -> the private module defining it. ``import landed`` stays cheap: no Temporal
# client, HTTP stack or pydantic model is built until a name is used, which keeps every CLI
# start (``landed verify`` and ``landed guard`` run from agent hooks) fast, and keeps the
# workflow sandbox, which re-executes this file for each workflow run, from paying for it.
_EXPORTS: dict[str, str] = {
    "ActContext": "landed._acts",
    "act": "landed._acts",
    "Client": "landed._client",
    "RunnerNotAnswering": "landed._client",
    "TaskHandle": "landed._client",
    "TaskIdReused": "landed._client",
    "TaskNotSettled": "landed._client",
    "TaskStatus": "landed._client",
    "NamespaceNotReady": "landed._client",
    "AtLeast": "landed._contract",
    "CallLogProbe": "landed._contract",
    "CommandProbe": "landed._contract",
    "Contains": "landed._contract",
    "Contract": "landed._contract",
    "Count": "landed._contract",
    "DeploymentProbe": "landed._contract",
    "Equals": "landed._contract",
    "Evidence": "landed._contract",
    "FileProbe": "landed._contract",
    "GitProbe": "landed._contract",
    "HttpProbe": "landed._contract",
    "JsonPath": "landed._contract",
    "NonEmpty": "landed._contract",
    "Observation": "landed._contract",
    "Outcome": "landed._contract",
    "PaymentProbe": "landed._contract",
    "ProviderObjectProbe": "landed._contract",
    "RecordProbe": "landed._contract",
    "Regex": "landed._contract",
    "RungAtLeast": "landed._contract",
    "SentLogProbe": "landed._contract",
    "gate": "landed._gate",
    "verify": "landed._gate",
    "Finding": "landed._grading",
    "Grade": "landed._grading",
    "grade": "landed._grading",
    "InvalidLine": "landed._intake",
    "read_receipts": "landed._intake",
    "ARTIFACT_KINDS": "landed._ladder",
    "CALL_LADDER": "landed._ladder",
    "CallRung": "landed._ladder",
    "DONE_WORDS": "landed._ladder",
    "MESSAGE_LADDER": "landed._ladder",
    "MessageRung": "landed._ladder",
    "ProofLevel": "landed._ladder",
    "READ_BACK_KINDS": "landed._ladder",
    "Status": "landed._ladder",
    "required_level": "landed._ladder",
    "Ledger": "landed._ledger",
    "LedgerConflict": "landed._ledger",
    "LedgerError": "landed._ledger",
    "open_ledger": "landed._ledger",
    "observe": "landed._observe",
    "Approval": "landed._receipt",
    "BusinessOutcome": "landed._receipt",
    "Cost": "landed._receipt",
    "LandedExtension": "landed._receipt",
    "ProofItem": "landed._receipt",
    "Receipt": "landed._receipt",
    "SignedObservation": "landed._receipt",
    "Scorecard": "landed._scorecard",
    "KeyPair": "landed._signing",
    "TrustStore": "landed._signing",
    "sign_proof": "landed._signing",
    "verify_proof": "landed._signing",
    "SourceConfig": "landed._sources",
    "SourceRegistry": "landed._sources",
    "ActReport": "landed._task",
    "ActSpec": "landed._task",
    "ApprovalGate": "landed._task",
    "ConsentGate": "landed._task",
    "RetryBudget": "landed._task",
    "StepTimeouts": "landed._task",
    "TaskSpec": "landed._task",
    "TaskSpecError": "landed._task",
    "check_spec": "landed._task",
    "Duplicated": "landed._verdict",
    "Empty": "landed._verdict",
    "InvalidContract": "landed._verdict",
    "Mismatch": "landed._verdict",
    "NotLanded": "landed._verdict",
    "ProbeFailed": "landed._verdict",
    "Vacuous": "landed._verdict",
    "Verdict": "landed._verdict",
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
    "Client",
    "CommandProbe",
    "ConsentGate",
    "Contains",
    "Contract",
    "Cost",
    "Count",
    "DeploymentProbe",
    "Duplicated",
    "Empty",
    "Equals",
    "Evidence",
    "FileProbe",
    "Finding",
    "GitProbe",
    "Grade",
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
    "TaskSpec",
    "TaskSpecError",
    "TaskStatus",
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
