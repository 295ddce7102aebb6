"""examples/http_publish runs as its README says: dev.sh starts the tiny CMS and a real
`landed dev`, run.py prints DONE for the page the CMS kept and NOT DONE for the one it answered
201 to and dropped, and the CMS holds exactly what the verdicts say."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers.examples import example_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _status(port: str, slug: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/pages/{slug}", timeout=10) as page:
            return int(page.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_a_kept_page_is_done_and_a_dropped_one_is_not(tmp_path: Path) -> None:
    with example_stack("http_publish", tmp_path) as example:
        done = example.run("python", "run.py")
        assert (done.returncode, done.stdout) == (0, example.expected()), done.stderr[-3000:]
        port = (example.folder / "cms.port").read_text()
        # The act posted both and got 201 twice; the CMS kept one: the verdicts are the CMS's.
        assert (_status(port, "launch"), _status(port, "spring-sale")) == (200, 404)
