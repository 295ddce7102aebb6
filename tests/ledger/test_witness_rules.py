"""The witness's comparison with a ledger, pure: behind the witness, written anew past a
witnessed position, or a witness holding heads of a key nobody trusts."""

from __future__ import annotations

from landed.ledger.chain import GENESIS, ChainHead, HeadSigner
from landed.ledger.witness import WitnessHead, cut_back
from landed.signing import KeyPair


def _chain(key: KeyPair, n: int, body: str) -> list[WitnessHead]:
    head, out = ChainHead(0, 0, GENESIS), []
    for i in range(1, n + 1):
        head = head.next(i, body * 64)
        out.append(WitnessHead.of(HeadSigner(key).sign(head)))
    return out


def test_a_ledger_written_anew_past_a_witnessed_position_is_a_cut_back() -> None:
    key = KeyPair.generate()
    trust = {key.key_id: key.public_key}
    witnessed = _chain(key, 4, "a")[2:]  # the witness holds positions 3 and 4
    same = {h.pos: h.link for h in _chain(key, 6, "a")}
    assert cut_back(witnessed, trust, 6, same) == []
    # Cut back to 2, then six rows more: positions 3 and 4 hold other rows now.
    anew = {h.pos: h.link for h in _chain(key, 6, "b")}
    found = cut_back(witnessed, trust, 6, anew)
    assert len(found) == 2 and all("written anew" in f for f in found)
    # Cut back to 2 and left there: behind the witness.
    behind = cut_back(witnessed, trust, 2, {1: same[1], 2: same[2]})
    assert len(behind) == 1 and "position 2, but the witness holds one at position 4" in behind[0]


def test_heads_of_a_key_nobody_trusts_are_not_counted_and_are_named() -> None:
    key, stranger = KeyPair.generate(), KeyPair.generate()
    found = cut_back(_chain(stranger, 4, "a"), {key.key_id: key.public_key}, 0, {})
    assert len(found) == 1 and "not signed by a trusted key" in found[0]
