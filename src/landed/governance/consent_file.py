"""Consent and do-not-contact from a file source (GOV-6): the file's format and its verdict.

A consent source may be a JSON file instead of a SQL database: a source of kind ``file`` whose
``path`` is the file itself, holding one object::

    {"do_not_contact": [{"recipient": "bob@example.com", "channel": "*"}],
     "consent": [{"recipient": "ann@example.com", "channel": "message"}]}

``channel`` is ``message``, ``call`` or ``*`` (every channel). The verdict is the SQL source's:
contact needs a consent entry and no do-not-contact entry. A file that cannot be read, is
larger than ``CONSENT_FILE_CAP``, repeats a key or does not have this shape refuses contact,
naming the fix; it never passes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from landed.governance.consent import unreadable
from landed.task.gate_spec import Contacts
from landed.util.strictjson import DuplicateKey, loads

__all__ = ["CONSENT_FILE_CAP", "ConsentFile", "judge_consent_file"]

#: The most of a consent file the verifier reads (bytes); a longer one refuses contact.
CONSENT_FILE_CAP = 8 * 1024 * 1024

_SHAPE = (
    'one JSON object {"do_not_contact": [{"recipient": ..., "channel": ...}], "consent": '
    '[{"recipient": ..., "channel": ...}]} with channel "message", "call" or "*", each key once '
    "(docs/governance.md: Consent before contact)"
)


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipient: str = Field(min_length=1, max_length=1000)
    channel: Literal["message", "call", "*"]


class ConsentFile(BaseModel):
    """A consent file's content."""

    model_config = ConfigDict(extra="forbid")

    do_not_contact: list[_Entry] = Field(default_factory=list)
    consent: list[_Entry] = Field(default_factory=list)


def _problem(data: bytes) -> tuple[ConsentFile | None, str]:
    try:
        return ConsentFile.model_validate(loads(data.decode("utf-8"))), ""
    except DuplicateKey as exc:
        return None, f"a key is given twice ({exc})"
    except UnicodeDecodeError:
        return None, "it is not UTF-8 text"
    except ValueError as exc:  # json's decode error, pydantic's validation error
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the top level"
            return None, f"{where}: {first['msg']}"
        return None, f"it is not JSON ({' '.join(str(exc).split())[:200]})"


def judge_consent_file(contacts: Contacts, data: bytes, path: str) -> str | None:
    """Why contact is refused (None: allowed), from the consent file's bytes."""
    source, who, channel = contacts.consent_source, contacts.recipient, contacts.kind
    content, problem = _problem(data)
    if content is None:
        return unreadable(
            contacts, f"consent file {path} is malformed: {problem}; fix: write it as {_SHAPE}"
        )

    def listed(entries: list[_Entry]) -> bool:
        return any(e.recipient == who and e.channel in (channel, "*") for e in entries)

    if listed(content.do_not_contact):
        return (
            f"{who} is on the do-not-contact list in consent source {source!r} for "
            f"{channel} (file {path}, do_not_contact)"
        )
    if not listed(content.consent):
        return f"no consent from {who} for {channel} is recorded in consent source {source!r}"
    return None
