"""examples/consent_message runs as its README says: on a real `landed dev` whose verifier
reads consent.json as a consent file source, the recipient with consent gets the message, and
the one on the do-not-contact list and the one with no consent are blocked in plain words and
never contacted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers.examples import example_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_only_the_recipient_with_consent_is_contacted(tmp_path: Path) -> None:
    with example_stack("consent_message", tmp_path) as example:
        done = example.run("python", "run.py")
        assert done.returncode == 0, done.stderr[-3000:]
        # The blocker names the consent file by its full path: shown as ... in the file.
        shown = done.stdout.replace(str(example.folder.parent), "...")
        assert shown == example.expected()
        with sqlite3.connect(example.folder / "outbox" / "outbox.db") as db:
            sent = db.execute("select recipient from sent").fetchall()
        assert sent == [("ann@example.com",)]
