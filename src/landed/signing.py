"""Ed25519 signatures over what a verifier observed, bound to the claim the proof supports."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from landed.probes.contract import Observation, Outcome

if TYPE_CHECKING:
    from landed.probes.sources import SourceRegistry
from landed.receipts.model import ProofItem, Receipt, SignedObservation, attempt_of, run_id_of

__all__ = [
    "ALGORITHM",
    "KeyPair",
    "SigningError",
    "TrustStore",
    "check_proof",
    "check_reading",
    "key_id_of",
    "load_public_key",
    "observation_payload",
    "redact_key",
    "sign_proof",
    "verify_proof",
]

ALGORITHM = "ed25519"
# Domain separation: these bytes can never be mistaken for another landed signature.
# v2 binds the phase (before/after) and the workflow run, so a pre-read or a reading from
# another run cannot stand in for this run's read-back.
_PURPOSE = "landed.observation.v2"
#: The only phase whose signed readings count as a read-back of the outcome.
AFTER = "after"


class SigningError(Exception):
    """A key could not be made, read or trusted; the message names the file and the fix."""


def key_id_of(public_key: Ed25519PublicKey) -> str:
    """First 16 hex digits of sha256 over the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def _public_pem(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@dataclass(frozen=True)
class KeyPair:
    """The verifier's signing key. Only the verifier process should ever load it."""

    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> KeyPair:
        return cls(Ed25519PrivateKey.generate())

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def key_id(self) -> str:
        return key_id_of(self.public_key)

    def public_pem(self) -> bytes:
        return _public_pem(self.public_key)

    def private_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def sign(self, data: bytes) -> bytes:
        return self.private_key.sign(data)

    def save(self, directory: Path | str, stem: str | None = None) -> tuple[Path, Path]:
        """Write ``<stem>.key`` (mode 0600) and ``.pub``, ``landed-<key_id>`` by default;
        never overwrites a file."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        private = directory / f"{stem or f'landed-{self.key_id}'}.key"
        public = private.with_suffix(".pub")
        for path in (private, public):
            if path.exists():
                raise SigningError(f"{path} already exists; choose another --out directory")
        # O_EXCL: never follow or reuse a file someone else created; 0600 from the first byte.
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(self.private_pem())
        os.chmod(private, 0o600)
        public.write_bytes(self.public_pem())
        return private, public

    @classmethod
    def load(cls, path: Path | str) -> KeyPair:
        data = _read(path, "private key")
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise SigningError(
                f"{path} is not an unencrypted PEM private key ({exc}); "
                "make one with `landed keys new`"
            ) from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningError(f"{path} holds a {type(key).__name__}; landed signs with Ed25519")
        return cls(key)


# A PEM Ed25519 key is about 120 bytes; 64 KiB leaves room for comments and refuses a device
# or a wrong file (``--trust /dev/zero``) before it is buffered.
KEY_FILE_MAX_BYTES = 64 * 1024


def _read(path: Path | str, what: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(KEY_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise SigningError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc
    if len(data) > KEY_FILE_MAX_BYTES:
        raise SigningError(
            f"{path} is larger than {KEY_FILE_MAX_BYTES // 1024} KiB, too large for a {what}; "
            "pass the .pem/.pub file `landed keys new` wrote"
        )
    return data


def load_public_key(path: Path | str) -> Ed25519PublicKey:
    data = _read(path, "public key")
    if b"PRIVATE KEY" in data:
        raise SigningError(
            f"{path} is a private key; trust the public half (the .pub file) and keep the "
            "private key on the verifier only"
        )
    blocks = data.count(b"-----BEGIN")
    if blocks > 1:
        # The parser reads the first block and ignores the rest: a second key would be left
        # untrusted without a word.
        raise SigningError(
            f"{path} holds {blocks} PEM blocks; put one public key in each .pub file (--trust "
            "takes several files, or a directory of them)"
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise SigningError(
            f"{path} is not a PEM public key ({exc}); pass the .pub file `landed keys new` wrote"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningError(f"{path} holds a {type(key).__name__}; landed verifies Ed25519 only")
    return key


class TrustStore(Mapping[str, Ed25519PublicKey]):
    """The public keys whose signatures are trusted, by key id."""

    def __init__(self, keys: Iterable[Ed25519PublicKey] = ()) -> None:
        self._keys = {key_id_of(k): k for k in keys}

    @classmethod
    def load(cls, paths: Iterable[Path | str]) -> TrustStore:
        """Read PEM public keys; a directory contributes every ``*.pub`` file in it."""
        keys: list[Ed25519PublicKey] = []
        for path in map(Path, paths):
            if path.is_dir():
                found = sorted(path.glob("*.pub"))
                if not found:
                    raise SigningError(f"{path} holds no .pub files; pass a public key file")
                keys.extend(load_public_key(p) for p in found)
            else:
                keys.append(load_public_key(path))
        return cls(keys)

    def __getitem__(self, key_id: str) -> Ed25519PublicKey:
        return self._keys[key_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def signature_ok(self, receipt: Receipt, proof: ProofItem) -> bool:
        """The hook the grader takes: True only for a valid signature by a trusted key."""
        return verify_proof(receipt, proof, self)


def observation_payload(
    *,
    task_id: str,
    attempt: int,
    proof: ProofItem,
    observation: Mapping[str, Any] | Observation,
    phase: str = AFTER,
    run_id: str = "",
    request: str = "",
    step: int | None = None,
    steps: int | None = None,
) -> bytes:
    """The exact bytes signed: the claim (task, attempt, phase, run, the read's request id when
    there is one, the plan step and the plan's length when given, proof fields) and what was
    observed.

    Values pass through their models first, so a receipt that went through JSON and back
    (ledger, export) yields the same bytes; any edit to a bound field yields different ones.
    """
    obs = (
        observation
        if isinstance(observation, Observation)
        else Observation.model_validate(observation)
    )
    item = proof.model_dump(mode="json", include={"kind", "ref", "expect", "result", "checked_by"})
    item["checked_at"] = proof.model_dump(mode="json")["checked_at"]
    payload = {
        "purpose": _PURPOSE,
        "task_id": task_id,
        "attempt": attempt,
        "phase": phase,
        "run_id": run_id,
        **item,
        "observation": obs.model_dump(mode="json"),
    }
    if request:
        # Which read the workflow asked for: a reading made for another request (earlier, or
        # by someone else's workflow) cannot answer this one. Absent in readings without one.
        payload["request"] = request
    if steps is not None:
        # Step i of n: a receipt that drops one step's read-back (a failing one) shows it.
        payload["step"] = step
        payload["steps"] = steps
    return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)


def sign_proof(
    key: KeyPair,
    *,
    task_id: str,
    attempt: int,
    proof: ProofItem,
    observation: Observation,
    phase: str = AFTER,
    run_id: str = "",
    request: str = "",
    step: int | None = None,
    steps: int | None = None,
) -> ProofItem:
    """A copy of ``proof`` carrying ``landed.observation``, ``landed.phase``, ``landed.run_id``,
    ``landed.request``, ``landed.step`` and ``landed.steps`` (when given) and
    ``landed.signature``.

    Set every other proof field (result, checked_by, checked_at, ...) before signing: the
    signature covers them, and changing one afterwards makes it fail. ``phase`` is ``before``
    for a pre-read (never a proof of the outcome) and ``after`` for a read-back; ``run_id`` is
    the workflow run the reading belongs to (the receipt's ``landed.run_id``).
    """
    payload = observation_payload(
        task_id=task_id,
        attempt=attempt,
        proof=proof,
        observation=observation,
        phase=phase,
        run_id=run_id,
        request=request,
        step=step,
        steps=steps,
    )
    signed = SignedObservation(
        key_id=key.key_id,
        algorithm=ALGORITHM,
        payload_sha256=hashlib.sha256(payload).hexdigest(),
        signature=base64.b64encode(key.sign(payload)).decode(),
    )
    extra = {
        "observation": observation.model_dump(mode="json"),
        "phase": phase,
        "run_id": run_id,
        **({"request": request} if request else {}),
        **({"step": step, "steps": steps} if steps is not None else {}),
        "signature": signed.model_dump(),
    }
    return proof.model_copy(update={"landed": {**(proof.landed or {}), **extra}})


def check_proof(
    receipt: Receipt, proof: ProofItem, trusted: Mapping[str, Ed25519PublicKey]
) -> str | None:
    """None when the proof's signature is valid and trusted, else the reason it is not."""
    return check_reading(
        proof,
        trusted,
        task_id=receipt.task_id,
        attempt=attempt_of(receipt),
        phase=AFTER,
        run_id=run_id_of(receipt),
    )


def _malformed_context(landed: Mapping[str, Any]) -> str | None:
    """Why the signed phase, run, request or plan step cannot be what was signed, if so."""
    signed = (landed.get("phase", AFTER), landed.get("run_id", ""), landed.get("request", ""))
    if not all(isinstance(v, str) for v in signed):
        return "the signed phase, run id or request is malformed (landed.phase, .run_id, .request)"
    signed_step, signed_steps = landed.get("step"), landed.get("steps")
    if signed_steps is not None and not (
        isinstance(signed_step, int)
        and isinstance(signed_steps, int)
        and not isinstance(signed_step, bool)
        and not isinstance(signed_steps, bool)
        and 0 <= signed_step < signed_steps
    ):
        return "the signed plan step is malformed (landed.step, .steps)"
    return None


def _signature_problem(
    public_key: Ed25519PublicKey,
    signed: SignedObservation,
    signature: bytes,
    proof: ProofItem,
    observation: Observation,
    landed: Mapping[str, Any],
    task_id: str,
    attempt: int,
) -> str | None:
    """Why the signature does not cover this receipt's claim for this task and attempt, if so."""
    try:
        payload = observation_payload(
            task_id=task_id,
            attempt=attempt,
            proof=proof,
            observation=observation,
            phase=landed.get("phase", AFTER),
            run_id=landed.get("run_id", ""),
            request=landed.get("request", ""),
            step=landed.get("step"),
            steps=landed.get("steps"),
        )
    except TypeError as exc:  # orjson: an integer past 64 bits, which nothing signed holds
        return f"the signed observation cannot be put in its signed form: {exc}"
    if hashlib.sha256(payload).hexdigest() != signed.payload_sha256:
        return "the signed claim differs from this receipt: it was changed after signing"
    try:
        public_key.verify(signature, payload)
    except InvalidSignature:
        return f"the signature does not verify with key {signed.key_id}"
    return None


def _other_context(signed_phase: str, phase: str) -> str | None:
    if signed_phase == phase:
        return None
    if phase == AFTER:
        return (
            f"the signed reading is a {signed_phase!r} reading (the state before the act), "
            "not a read-back after it"
        )
    return f"the signed reading is a {signed_phase!r} reading, not a {phase!r} reading"


def _other_run(signed_run: str, run_id: str) -> str | None:
    if signed_run == run_id:
        return None
    return (
        f"the reading was signed for workflow run {signed_run or '(none)'!r}, not this "
        f"receipt's run {run_id or '(none)'!r}: it was carried over from another run"
    )


def check_reading(
    proof: ProofItem,
    trusted: Mapping[str, Ed25519PublicKey],
    *,
    task_id: str,
    attempt: int,
    phase: str,
    run_id: str,
) -> str | None:
    """None when ``proof`` is a reading a trusted verifier signed for exactly this task,
    attempt, phase and workflow run; else the reason it is not. The read's request id, when
    signed, is covered by the signature; which request it must be is the caller's to check.

    The workflow holds its pre-read (``before``) and reconciling readings to this before it
    lets them decide anything, and a receipt's read-back is held to it with phase ``after``.
    """
    landed = proof.landed or {}
    if "signature" not in landed:
        return "the proof carries no signature (landed.signature)"
    try:
        signed = SignedObservation.model_validate(landed["signature"])
        observation = Observation.model_validate(landed.get("observation"))
        signature = base64.b64decode(signed.signature, validate=True)
    # binascii.Error is a ValueError; so is a signature with non-ASCII characters.
    except (ValidationError, ValueError) as exc:
        return f"the signature or observation is malformed: {str(exc).splitlines()[0]}"
    if signed.algorithm != ALGORITHM:
        return f"signature algorithm {signed.algorithm!r} is not supported (only {ALGORITHM})"
    public_key = trusted.get(signed.key_id)
    if public_key is None:
        return f"key {signed.key_id} is not trusted; pass its public key with --trust"
    problem = (
        _malformed_context(landed)
        or _signature_problem(
            public_key, signed, signature, proof, observation, landed, task_id, attempt
        )
        or _other_context(landed.get("phase", AFTER), phase)
        or _other_run(landed.get("run_id", ""), run_id)
    )
    if problem is not None:
        return problem
    # As the grader reads it: "PASS" and " pass " are a pass there, so they must be here.
    says_pass = (proof.result or "").strip().lower() == Outcome.PASS.value
    if says_pass and observation.outcome != Outcome.PASS:
        return f"the proof says pass but the signed observation says {observation.outcome}"
    return None


def verify_proof(
    receipt: Receipt, proof: ProofItem, trusted: Mapping[str, Ed25519PublicKey]
) -> bool:
    """True only when ``proof`` carries a valid signature by a trusted key over this claim."""
    return check_proof(receipt, proof, trusted) is None


def redact_key(registry: SourceRegistry, key: KeyPair, path: str | Path | None) -> None:
    """Add the verifier's signing key (and where it lives) to ``registry``'s redaction list."""
    from cryptography.hazmat.primitives import serialization

    from landed.probes.policy import key_secrets

    raw = key.private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    registry.redactor = registry.redactor.with_secrets(
        key_secrets(key.private_pem().decode(), path, raw)
    )
