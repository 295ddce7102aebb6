"""The ledger's witness: signed heads kept where the ledger's owner cannot rewrite them.

The signed heads live in the same file (or schema) as the rows, so whoever can rewrite one can
cut both back to an earlier head, and the ledger alone then looks intact. The runner therefore
also sends each head it signs to a Temporal workflow (``LandedLedgerWitness``), whose history is
the witness. These are its rules, pure so the workflow and ``landed ledger verify`` share them:
the witness accepts a head only if the runner's head key signed it, never one below the latest
it holds nor one whose link differs at a position it holds; verify reports a ``cut-back`` when
the ledger's latest signed head is behind the witness's or disagrees with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from pydantic import BaseModel, Field

from landed.ledger.chain import SignedHead
from landed.signing import key_id_of

__all__ = [
    "DEFAULT_KEEP",
    "WITNESS_HEADS_MEMO",
    "WITNESS_QUERY",
    "WITNESS_SIGNAL",
    "WITNESS_UPDATE",
    "WITNESS_WORKFLOW",
    "WitnessHead",
    "WitnessState",
    "accept",
    "cut_back",
    "offered",
    "refusal",
    "witness_id",
]

WITNESS_WORKFLOW = "LandedLedgerWitness"
WITNESS_UPDATE = "witness_head"
#: The same head as a signal: what the runner sends as it stops (no worker then accepts an
#: Update, but Temporal records a signal at once); a refusal is kept in the state instead.
WITNESS_SIGNAL = "witness_head_signal"
#: Refusals of signalled heads the runner's key signed, kept for `ledger verify --witness`.
MAX_REFUSED = 10
WITNESS_QUERY = "witnessed_heads"
#: The memo key of the heads held: `ledger verify --witness` reads them with one describe.
WITNESS_HEADS_MEMO = "landed-witnessed-heads"
#: Heads held (the latest ones); older ones stay in the workflow's earlier runs' histories.
DEFAULT_KEEP = 32


def witness_id(key_id: str) -> str:
    """The witness of the ledger whose runner signs with ``key_id``: one per head key, so
    the key a reader trusts names the witness to ask."""
    return f"landed-ledger-witness-{key_id}"


class WitnessHead(BaseModel):
    """A signed head as it crosses Temporal (the fields of chain.SignedHead)."""

    pos: int = Field(ge=1)
    sequence: int = Field(ge=0)
    link: str = Field(min_length=64, max_length=64)
    key_id: str = Field(max_length=200)
    signed_at: str = Field(max_length=64)
    signature: str = Field(max_length=200)
    #: A v2 head's detail (landed.ledger.vouch), part of what the runner signed.
    detail: str | None = Field(default=None, max_length=100_000)

    @classmethod
    def of(cls, head: SignedHead) -> WitnessHead:
        return cls(
            pos=head.pos,
            sequence=head.sequence,
            link=head.link,
            key_id=head.key_id,
            signed_at=head.signed_at,
            signature=head.signature,
            detail=head.detail,
        )

    def signed(self) -> SignedHead:
        return SignedHead(
            self.pos,
            self.sequence,
            self.link,
            self.key_id,
            self.signed_at,
            self.signature,
            self.detail,
        )


class WitnessState(BaseModel):
    """What one run of the witness starts from: the runner's head public key (PEM), how many
    heads it keeps, and the heads the run before it held."""

    public_pem: str = Field(max_length=4000)
    keep: int = Field(default=DEFAULT_KEEP, ge=1, le=1000)
    heads: list[WitnessHead] = Field(default_factory=list)
    #: Heads one run takes (each an Update and a memo upsert) before it continues as new.
    per_run: int = Field(default=500, ge=1, le=5000)
    #: When the first run of this witness started: a witness started over is seen as one.
    since: datetime | None = None
    #: Why signalled heads the runner's key signed were refused (the latest MAX_REFUSED).
    refused: list[str] = Field(default_factory=list)


def _public_key(pem: str) -> Ed25519PublicKey:
    key = load_pem_public_key(pem.encode())
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("the witness's key is not an Ed25519 public key")
    return key


def refusal(state: WitnessState, head: WitnessHead) -> str | None:
    """Why the witness refuses ``head`` (None: it accepts it, or already holds it)."""
    key = _public_key(state.public_pem)
    if head.key_id != key_id_of(key):
        return (
            f"head at position {head.pos} is signed by key {head.key_id}; this witness "
            f"accepts only the runner's head key {key_id_of(key)}"
        )
    if not head.signed().signature_ok(key):
        return f"head at position {head.pos}: the signature does not verify"
    for held in state.heads:
        if held.pos == head.pos:
            if (held.sequence, held.link) != (head.sequence, head.link):
                return (
                    f"head at position {head.pos} has link {head.link[:16]}..., the witness "
                    f"holds {held.link[:16]}... there: the chain was rewritten"
                )
            return None  # a resend of a head it holds
    if state.heads and head.pos < state.heads[-1].pos:
        return (
            f"head at position {head.pos} is below the latest witnessed head "
            f"(position {state.heads[-1].pos}): a ledger cut back"
        )
    return None


def accept(state: WitnessState, head: WitnessHead) -> WitnessState:
    """The state after an accepted ``head`` (the caller checked ``refusal`` first)."""
    if any(held.pos == head.pos for held in state.heads):
        return state
    heads = [*state.heads, head][-state.keep :]
    return state.model_copy(update={"heads": heads})


def offered(state: WitnessState, head: WitnessHead) -> WitnessState:
    """The state after a signalled ``head``: held if accepted; if refused, the refusal is
    kept only when the runner's key signed the head after the latest held one (anyone with
    Temporal access can send a signal, and replay an old head; only the runner can sign a
    new head below the one it signed before)."""
    problem = refusal(state, head)
    if problem is None:
        return accept(state, head)
    key = _public_key(state.public_pem)
    if head.key_id != key_id_of(key) or not head.signed().signature_ok(key):
        return state
    if state.heads and head.signed_at <= state.heads[-1].signed_at:
        return state  # an old head sent again, not one the runner signed since
    return state.model_copy(update={"refused": [*state.refused, problem][-MAX_REFUSED:]})


def cut_back(
    witnessed: Sequence[WitnessHead],
    trust: Mapping[str, Ed25519PublicKey],
    last_signed_pos: int,
    links: Mapping[int, str],
) -> list[str]:
    """What the ledger's state says against the witness's heads: ``last_signed_pos`` is the
    ledger's latest trusted signed head, ``links`` its rows' links at the witnessed positions
    (absent: no such row). Each message is one ``cut-back`` finding."""
    found: list[str] = []
    trusted = [
        h for h in witnessed if h.key_id in trust and h.signed().signature_ok(trust[h.key_id])
    ]
    if len(trusted) < len(witnessed):
        found.append(
            f"the witness holds {len(witnessed) - len(trusted)} head(s) not signed by a "
            "trusted key: it was started with another key; its heads are not counted"
        )
    if not trusted:
        return found
    latest = max(trusted, key=lambda h: h.pos)
    if last_signed_pos < latest.pos:
        found.append(
            f"the ledger's latest signed head is at position {last_signed_pos}, but the witness "
            f"holds one at position {latest.pos} (signed {latest.signed_at}): the ledger was "
            "cut back to an earlier state"
        )
    for head in trusted:
        link = links.get(head.pos)
        if link is not None and link != head.link:
            found.append(
                f"the ledger's row at position {head.pos} has link {link[:16]}..., the witness "
                f"holds {head.link[:16]}... there: the ledger was cut back and written anew"
            )
    return found
