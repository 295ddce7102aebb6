"""examples/claims runs as its README says: agent.py writes its orders outside Temporal, and
`landed reconcile --contracts contracts.json claims.jsonl` on a real `landed dev` (its runner
holding the same contracts) prints DONE for the claim that landed and NOT DONE for the lie and
for the bare log line, exit 1; read again, each claim attaches to its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.examples import example_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RECONCILE = ("landed", "reconcile", "--contracts", "contracts.json", "--concurrency", "1")


def test_each_claim_is_read_back_by_the_operators_contract(tmp_path: Path) -> None:
    with example_stack("claims", tmp_path) as example:
        agent = example.run("python", "agent.py")
        assert agent.returncode == 0, agent.stderr
        done = example.run(*RECONCILE, "claims.jsonl")
        assert (done.returncode, done.stdout) == (1, example.expected()), done.stderr[-3000:]
        again = example.run(*RECONCILE, "claims.jsonl")
    assert again.returncode == 1, again.stderr[-3000:]
    assert again.stdout == example.expected().replace("\n", " (already reconciled)\n")
