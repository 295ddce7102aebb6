"""The Temporal Worker Controller's custom resources checked offline against its CRDs
(tests/deploy/crds, copied unchanged from the controller's chart): each CRD's openAPIV3Schema
with jsonschema, and its CEL rules (x-kubernetes-validations) as written out below."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRDS = Path(__file__).resolve().parents[1] / "deploy" / "crds"
GROUP = "temporal.io"
Doc = dict[str, Any]


@functools.cache
def schemas() -> dict[tuple[str, str], Doc]:
    """(apiVersion, kind) -> openAPIV3Schema, for every served version of every CRD."""
    found: dict[tuple[str, str], Doc] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            found[key] = version["schema"]["openAPIV3Schema"]
    return found


def _seconds(text: str) -> float:
    """A Go duration ("15m", "1h30m", "30s") in seconds; ValueError when it is none."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a Go duration")
    unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * unit[u] for n, u in parts)


def _rollout(r: Doc) -> list[str]:
    found = []
    if r.get("strategy") == "Progressive" and not r.get("steps"):
        found.append("steps are required for Progressive rollout")
    inp = r.get("gate", {}).get("inputFrom")
    if inp is not None and ("configMapKeyRef" in inp) == ("secretKeyRef" in inp):
        found.append("exactly one of configMapKeyRef or secretKeyRef must be set")
    return found


def _step(s: Doc) -> list[str]:
    try:
        ok = _seconds(s["pauseDuration"]) >= 30
    except ValueError as exc:
        return [str(exc)]
    return [] if ok else ["pause duration must be at least 30s"]


def _connection(spec: Doc) -> list[str]:
    both = "mutualTLSSecretRef" in spec and "apiKeySecretRef" in spec
    return ["Only one of mutualTLSSecretRef or apiKeySecretRef may be set"] if both else []


def _wrt(spec: Doc) -> list[str]:
    refs = [k for k in ("workerDeploymentRef", "temporalWorkerDeploymentRef") if k in spec]
    return [] if len(refs) == 1 else ["exactly one of workerDeploymentRef or its old name"]


def _name(obj: Doc) -> list[str]:
    name = obj.get("metadata", {}).get("name", "")
    return [] if len(name) <= 63 else [f"name {name!r} is longer than 63 characters"]


# Each CEL rule of the vendored CRDs, by its text, and what checks it here. A CRD release that
# adds a rule fails check_rules_known() until it is written out.
RULES: dict[str, Callable[[Doc], list[str]]] = {
    "self.strategy != 'Progressive' || (has(self.steps) && size(self.steps) > 0)": _rollout,
    "!has(self.gate) || !has(self.gate.inputFrom) || (has(self.gate.inputFrom.configMapKeyRef)"
    " != has(self.gate.inputFrom.secretKeyRef))": _rollout,
    "duration(self.pauseDuration) >= duration('30s')": _step,
    "!(has(self.mutualTLSSecretRef) && has(self.apiKeySecretRef))": _connection,
    "has(self.workerDeploymentRef) || has(self.temporalWorkerDeploymentRef)": _wrt,
    "!(has(self.workerDeploymentRef) && has(self.temporalWorkerDeploymentRef))": _wrt,
    "size(self.metadata.name) <= 63": _name,
}


def _walk(schema: Doc, value: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, rule, value) for every CEL rule the schema puts on a part of ``value``."""
    for rule in schema.get("x-kubernetes-validations", []):
        yield path, rule["rule"], value
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                yield from _walk(sub, value[key], f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from _walk(schema["items"], item, f"{path}[{i}]")


def all_rules() -> set[str]:
    def rules(schema: Any) -> Iterator[str]:
        if isinstance(schema, dict):
            for rule in schema.get("x-kubernetes-validations", []):
                yield rule["rule"]
            for sub in schema.values():
                yield from rules(sub)
        elif isinstance(schema, list):
            for sub in schema:
                yield from rules(sub)

    return {r for s in schemas().values() for r in rules(s)}


def problems(obj: Doc) -> list[str]:
    """Why the API server would refuse ``obj``; empty when its CRD's schema and rules hold."""
    schema = schemas().get((obj.get("apiVersion", ""), obj.get("kind", "")))
    if schema is None:
        return [f"no vendored CRD defines {obj.get('apiVersion')} {obj.get('kind')}"]
    validator = jsonschema.Draft7Validator(schema)
    found = [
        f"{obj['kind']}/{obj['metadata']['name']} {'.'.join(map(str, e.absolute_path))}: "
        f"{e.message}"
        for e in validator.iter_errors(obj)
    ]
    for path, rule, value in _walk(schema, obj, "$"):
        found += [
            f"{obj['kind']}/{obj['metadata']['name']} {path}: {m}" for m in RULES[rule](value)
        ]
    return sorted(set(found))
