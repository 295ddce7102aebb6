"""The operator's claim contracts as data: loading and lint at load (a contract a bad write would
pass is refused, naming the contract and the write), values substituted as values, a claim's
class and parameters checked, and where the runner and ``landed reconcile`` refuse a bad file."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from landed.cli import app
from landed.signing import KeyPair, TrustStore
from landed.task.claim_contracts import (
    ClaimContracts,
    ClaimOutcome,
    ClaimRefused,
    ContractsError,
    judge_claim,
    resolve,
)
from landed.task.claim_contracts_lint import parse_claim_contracts
from landed.task.claim_grade import SELF_CHOSEN, evidence_receipt, no_read_back_reason
from landed.task.claims_in import BadClaim, VerifyClaimInput, parse_claim, pin_claim
from landed.temporal.role_setup import RoleError, check_settings
from landed.temporal.settings import RunnerSettings

ORDERS: dict[str, Any] = {
    "params": {"batch": "string", "count": "integer"},
    "outcome": "{count} order lines of batch {batch} are in the orders table",
    "proof_plan": [
        {
            "action": "insert the order lines",
            "probe": {
                "kind": "record",
                "source": "shop-db",
                "query": "select count(*) from orders where batch = ?",
                "params": [{"param": "batch"}],
            },
            "expect": {"type": "count", "value": {"param": "count"}},
        }
    ],
}
POSTS: dict[str, Any] = {
    "params": {"slug": "string"},
    "proof_plan": [
        {
            "action": "publish",
            "probe": {
                "kind": "http",
                "source": "site",
                "url": {"template": "/posts/count?slug={slug}"},
            },
            "expect": {"type": "count", "value": 1},
        }
    ],
}


def _file(**contracts: dict[str, Any]) -> bytes:
    return json.dumps({"contracts": contracts}).encode()


def _contracts() -> ClaimContracts:
    return parse_claim_contracts(_file(**{"orders.created": ORDERS, "posts.published": POSTS}), "f")


def _refused(contract: dict[str, Any]) -> str:
    with pytest.raises(ContractsError) as err:
        parse_claim_contracts(_file(**{"orders.bad": contract}), "contracts.json")
    return str(err.value)


def _step(probe: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    return {"action": "insert the order lines", "probe": probe, "expect": expect}


def _orders(**changes: Any) -> dict[str, Any]:
    contract = copy.deepcopy(ORDERS)
    for key, value in changes.items():
        contract["proof_plan"][0][key] = value
    return contract


def test_values_stand_as_values_never_as_code() -> None:
    contracts = _contracts()
    sneaky = "b-17' or 1=1 --"
    outcome, plan = resolve(contracts, "orders.created", {"batch": sneaky, "count": 3})
    assert outcome == f"3 order lines of batch {sneaky} are in the orders table"
    probe = plan[0].probe
    assert probe.query == "select count(*) from orders where batch = ?"  # type: ignore[union-attr]
    assert probe.params == [sneaky]  # type: ignore[union-attr]
    assert plan[0].expect.value == 3  # type: ignore[union-attr]
    _, (step,) = resolve(contracts, "posts.published", {"slug": "a b/../x?y=1"})
    assert step.probe.url == "/posts/count?slug=a%20b%2F..%2Fx%3Fy%3D1"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("contract", "says"),
    [
        # A constant: its answer does not depend on the claim.
        (
            _orders(probe={"kind": "record", "source": "shop-db", "query": "select 1"}),
            "proof_plan.0: a constant write passes it: its probe uses none of the parameters",
        ),
        # A count that was already there: every order, whatever the claim's batch.
        (
            _orders(
                probe={
                    "kind": "record",
                    "source": "shop-db",
                    "query": "select count(*) from orders",
                }
            ),
            "a count or a row already there passes it",
        ),
        # Nothing written passes "at least 0".
        (
            {**_orders(expect={"type": "at_least", "value": 0}), "params": {"batch": "string"}},
            "a bad write passes it: nothing landed",
        ),
        (
            _orders(
                probe={"kind": "record", "source": "shop-db", "query": {"param": "batch"}},
            ),
            "proof_plan.0.probe.query: a parameter may not stand here",
        ),
        ({**ORDERS, "params": {**ORDERS["params"], "unused": "string"}}, "'unused' is used by no"),
        (_orders(expect={"type": "count", "value": {"param": "nope"}}), "'nope', which is not"),
    ],
)
def test_a_contract_a_bad_write_would_pass_is_refused_at_load(
    contract: dict[str, Any], says: str
) -> None:
    why = _refused(contract)
    assert why.startswith("contracts.json: claim contract 'orders.bad': "), why
    assert says in why, why


@pytest.mark.parametrize(
    ("outcome_class", "params", "says"),
    [
        ("orders.deleted", {"batch": "b"}, "not in the operator's claim contracts"),
        ("orders.created", {"batch": "b"}, r"needs the parameter 'count' \(integer\); add it"),
        ("orders.created", {"batch": "b", "count": "3"}, "'count' must be an integer"),
        ("orders.created", {"batch": "b", "count": True}, "'count' must be an integer"),
        ("orders.created", {"batch": 17, "count": 3}, "'batch' must be a string"),
        ("orders.created", {"batch": "b", "count": 3, "x": 1}, "no parameter 'x'; drop it"),
    ],
)
def test_an_unknown_class_or_a_bad_parameter_is_refused(
    outcome_class: str, params: dict[str, Any], says: str
) -> None:
    with pytest.raises(ClaimRefused, match=says):
        resolve(_contracts(), outcome_class, params)
    judged = judge_claim(_contracts(), ClaimOutcome(outcome_class=outcome_class, params=params))
    assert judged.proof_plan == [] and judged.refused is not None
    assert re.search(says, judged.refused)


def test_the_runner_judges_by_its_own_contracts_only() -> None:
    asked = ClaimOutcome(outcome_class="posts.published", params={"slug": "a"})
    none = judge_claim(None, asked)
    assert none.refused is not None and "LANDED_RUNNER_CLAIM_CONTRACTS" in none.refused
    pinned = judge_claim(_contracts(), asked.model_copy(update={"contracts_sha256": "0" * 64}))
    assert pinned.refused is not None and "give the runner the same file" in pinned.refused
    ok = judge_claim(_contracts(), asked.model_copy(update={"contracts_sha256": None}))
    assert ok.refused is None and len(ok.proof_plan) == 1


def _claim(record: dict[str, Any]) -> VerifyClaimInput | BadClaim | None:
    return parse_claim(4, json.dumps({"task_id": "t", **record}).encode())


def test_a_claim_names_a_class_and_its_values() -> None:
    claim = _claim({"outcome": "orders.created", "params": {"batch": "b", "count": 3}})
    assert isinstance(claim, VerifyClaimInput) and claim.can_read_back
    assert (claim.kind, claim.outcome_class, claim.params) == (
        "contract",
        "orders.created",
        {"batch": "b", "count": 3},
    )
    other = _claim({"outcome": "orders.created", "params": {"batch": "c", "count": 3}})
    assert isinstance(other, VerifyClaimInput) and other.digest != claim.digest
    both = _claim(
        {
            "outcome": "orders.created",
            "params": {},
            "proof_plan": [{"action": "x", **_plain_step()}],
        }
    )
    assert isinstance(both, BadClaim) and "not both" in both.reason
    named = _claim({"outcome": "Orders were created", "params": {"batch": "b"}})
    assert isinstance(named, BadClaim) and "names an outcome class" in named.reason
    nested = _claim({"outcome": "orders.created", "params": {"batch": ["b"]}})
    assert isinstance(nested, BadClaim) and "params.batch" in nested.reason
    # reconcile --contracts: a class its file cannot judge is a bad line; one it can is pinned.
    pinned = pin_claim(claim, _contracts())
    assert isinstance(pinned, VerifyClaimInput)
    assert pinned.contracts_sha256 == _contracts().sha256
    unknown = _claim({"outcome": "orders.gone", "params": {"batch": "b"}})
    assert isinstance(unknown, VerifyClaimInput)
    bad = pin_claim(unknown, _contracts())
    assert isinstance(bad, BadClaim) and bad.line == 4 and "orders.gone" in bad.reason


def test_a_plan_the_claimant_brings_settles_at_most_p2_never_done() -> None:
    claim = _claim(
        {
            "claimed_status": "done",
            # A constant probe, as a claimant might choose it: never read as proof.
            "proof_plan": [{"action": "insert", **_plain_step()}],
            "proof": [{"kind": "commit", "ref": "3f2c1a9", "result": "pass"}],
        }
    )
    assert isinstance(claim, VerifyClaimInput) and not claim.can_read_back
    why = no_read_back_reason(claim)
    assert why == "its proof_plan is the claimant's own"
    receipt = evidence_receipt(
        claim,
        why=why,
        runner="runner@test",
        run_id="run-1",
        trusted=TrustStore([KeyPair.generate().public_key]),
        settled_at=datetime.now(UTC),
    )
    assert receipt.landed is not None
    ext = receipt.landed.model_dump()
    assert (receipt.verdict, ext["proof_level"], ext["meets_bar"]) == ("built", "P2", False)
    assert SELF_CHOSEN in ext["findings"]


def _plain_step() -> dict[str, Any]:
    return {
        "probe": {"kind": "record", "source": "shop-db", "query": "select 1"},
        "expect": {"type": "count", "value": 1},
    }


def _bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "contracts.json"
    const = _orders(probe={"kind": "record", "source": "shop-db", "query": "select 1"})
    path.write_bytes(_file(**{"orders.created": const}))
    return path


def test_the_runner_refuses_to_start_on_a_contract_a_bad_write_would_pass(tmp_path: Path) -> None:
    _, public = KeyPair.generate().save(tmp_path / "keys")
    settings = RunnerSettings(trust=[public], claim_contracts=_bad_file(tmp_path))
    with pytest.raises(RoleError) as err:
        check_settings(settings)
    assert str(err.value).startswith("LANDED_RUNNER_CLAIM_CONTRACTS: ")
    assert "claim contract 'orders.created'" in str(err.value) and "constant" in str(err.value)
    good = tmp_path / "good.json"
    good.write_bytes(_file(**{"orders.created": ORDERS}))
    check_settings(RunnerSettings(trust=[public], claim_contracts=good))


def test_reconcile_refuses_a_bad_contracts_file_before_it_connects(tmp_path: Path) -> None:
    stream = tmp_path / "claims.jsonl"
    stream.write_text('{"task_id": "t", "outcome": "orders.created", "params": {}}\n')
    result = CliRunner().invoke(
        app,
        ["reconcile", str(stream), "--contracts", str(_bad_file(tmp_path)), "--address", "x:1"],
    )
    assert result.exit_code == 3, result.output
    assert "claim contract 'orders.created'" in result.output and "constant" in result.output


def test_plan_lint_lints_a_claim_contracts_file_as_the_runner_does(tmp_path: Path) -> None:
    refused = CliRunner().invoke(app, ["plan", "lint", str(_bad_file(tmp_path))])
    assert refused.exit_code == 1, refused.output
    assert "claim contract 'orders.created'" in refused.output and "constant" in refused.output
    good = tmp_path / "good.json"
    good.write_bytes(_file(**{"orders.created": ORDERS}))
    clean = CliRunner().invoke(app, ["plan", "lint", str(good), "--json"])
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.output)["claim_contracts"] == ["orders.created"]
