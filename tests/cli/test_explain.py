"""``landed explain``: the catalogue holds every rule id landed's code and docs name (and no id
they do not), one rule prints its meaning, none lists them, an unknown id is exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landed.cli import app
from landed.receipts.rules import RULES, find_rule, rule_ids

ROOT = Path(__file__).resolve().parents[2]
RULES_FILE = ROOT / "src" / "landed" / "cli" / "rules.py"
# Where landed names its rules: the code (findings, docstrings), what it ships beside the code,
# and the docs a user reads.
SCANNED = ("src", "workflows", "activities", "bench", "dashboards", "deploy", "examples", "docs")
RULE_ID = re.compile(r"\b(?:DOD|GOV)-\d+\b")


def _files() -> list[Path]:
    found = [ROOT / "README.md"]
    for folder in SCANNED:
        found += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and p.suffix in {".py", ".md", ".yml", ".yaml", ".json", ".c"}
        ]
    return [p for p in found if p.resolve() != RULES_FILE]


def _used() -> dict[str, Path]:
    used: dict[str, Path] = {}
    for path in _files():
        for rule in RULE_ID.findall(path.read_text(errors="replace")):
            used.setdefault(rule, path)
    return used


def test_every_rule_id_landed_names_is_in_the_catalogue() -> None:
    used = _used()
    assert {"DOD-2", "DOD-10", "GOV-5"} <= set(used)  # the scan reads what it should
    missing = {rule: str(path.relative_to(ROOT)) for rule, path in used.items()}
    for rule in rule_ids():
        missing.pop(rule, None)
    assert missing == {}, "add these rules to landed.receipts.rules"


def test_the_catalogue_holds_no_rule_landed_never_names() -> None:
    assert sorted(set(rule_ids()) - set(_used())) == []
    assert len(set(rule_ids())) == len(RULES)


def test_every_rule_says_what_it_means_how_it_is_held_and_where_it_shows() -> None:
    for rule in RULES:
        assert RULE_ID.fullmatch(rule.id)
        assert rule.title and len(rule.meaning) > 80, rule.id
        assert rule.enforced and "`" in rule.shown_by, rule.id


@pytest.mark.parametrize("given", ["DOD-10", "dod-10", "dod10", " Dod_10 "])
def test_a_rule_id_is_found_in_any_case(given: str) -> None:
    found = find_rule(given)
    assert found is not None and found.id == "DOD-10"


def test_explain_prints_the_rule() -> None:
    result = CliRunner().invoke(app, ["explain", "gov-5"])
    assert result.exit_code == 0, result.output
    rule = find_rule("GOV-5")
    assert rule is not None
    text = " ".join(result.stdout.split())
    assert text.startswith("GOV-5")
    assert " ".join(rule.meaning.split()) in text
    assert "landed approve" in text and "How landed holds it:" in text


def test_explain_json_is_the_catalogues_entry() -> None:
    result = CliRunner().invoke(app, ["explain", "DOD-2", "--json"])
    assert result.exit_code == 0, result.output
    rule = find_rule("DOD-2")
    assert rule is not None and json.loads(result.stdout) == rule.as_dict()


def test_explain_without_a_rule_lists_them_all() -> None:
    text = CliRunner().invoke(app, ["explain"]).stdout
    for rule in RULES:
        assert rule.id in text
    listed = json.loads(CliRunner().invoke(app, ["explain", "--json"]).stdout)
    assert [r["id"] for r in listed["rules"]] == rule_ids()


def test_an_unknown_rule_is_exit_2_naming_the_known_ones() -> None:
    result = CliRunner().invoke(app, ["explain", "DOD-99"])
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "unknown rule 'DOD-99'" in said and "DOD-1, DOD-2" in said and "GOV-12" in said
    answer = json.loads(CliRunner().invoke(app, ["explain", "DOD-99", "--json"]).stdout)
    assert answer["error"] == "unknown_rule" and "GOV-5" in answer["message"]
