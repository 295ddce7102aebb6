"""The consent file's verdicts (GOV-6), without Temporal: allowed, refused, and every file
that cannot be judged refuses (never passes), naming the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from landed.governance.consent_file import CONSENT_FILE_CAP, judge_consent_file
from landed.task.gate_spec import Contacts


def _contacts(recipient: str, kind: str = "message") -> Contacts:
    return Contacts.model_validate(
        {"kind": kind, "recipient": recipient, "consent_source": "consent-file"}
    )


def _data(**content: object) -> bytes:
    return json.dumps(content).encode()


def test_consent_on_the_channel_or_every_channel_allows() -> None:
    data = _data(consent=[{"recipient": "a@x", "channel": "*"}])
    assert judge_consent_file(_contacts("a@x", "call"), data, "c.json") is None


def test_do_not_contact_wins_over_consent_and_consent_must_match() -> None:
    data = _data(
        do_not_contact=[{"recipient": "a@x", "channel": "call"}],
        consent=[{"recipient": "a@x", "channel": "*"}],
    )
    assert "do-not-contact" in (judge_consent_file(_contacts("a@x", "call"), data, "c") or "")
    assert judge_consent_file(_contacts("a@x", "message"), data, "c") is None
    refused = judge_consent_file(_contacts("b@x"), data, "c") or ""
    assert refused.startswith("no consent from b@x for message")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b'{"consent": [], "consent": []}', "given twice"),
        (b"not json", "it is not JSON"),
        (b"[]", "the top level"),
        (_data(consent=[{"recipient": "a@x", "channel": "sms"}]), "consent.0.channel"),
        (_data(consent=[], allow_all=True), "allow_all"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_malformed_file_refuses_and_names_the_fix(data: bytes, why: str) -> None:
    condition = judge_consent_file(_contacts("a@x"), data, "/etc/consent.json") or ""
    assert "could not be read" in condition and why in condition
    assert "/etc/consent.json" in condition and "fix: write it as" in condition


async def test_an_oversized_or_missing_file_refuses_unread(tmp_path: Path) -> None:
    """The verifier's bounded read: a file over the cap is refused after at most cap + 1 bytes
    (never buffered whole), a missing one names how to fix the source."""
    from landed.activities.consent import ConsentActivities
    from landed.probes.sources import SourceRegistry

    big = tmp_path / "big.json"
    with open(big, "wb") as out:
        out.truncate(CONSENT_FILE_CAP + 1)
    reader = ConsentActivities(SourceRegistry({}), "verifier@test")
    too_big = await reader._from_file(_contacts("a@x"), str(big)) or ""
    assert "could not be read" in too_big and "longer than" in too_big and "fix:" in too_big
    missing = await reader._from_file(_contacts("a@x"), str(tmp_path / "none.json")) or ""
    assert "could not be opened" in missing and "fix: create it" in missing
    assert "no path" in (await reader._from_file(_contacts("a@x"), None) or "")
