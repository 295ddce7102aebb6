"""Workers share landed's workflow modules across runs: no module or class state one run could
change for the next, and the check that finds such writes."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from helpers.source import parse

_MUTATING_METHODS = frozenset(
    (
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
        "__setattr__",
        "__delattr__",
    )
)


def _state_writes(
    source: str, shared: set[str], modules: frozenset[str] = frozenset()
) -> list[str]:
    """Statements in a module that could change state every run shares: a write to, a delete
    of, or a mutating method call on a module-level name, the class (type(self),
    self.__class__, a class by name), their attributes or items; and global statements.

    ``modules`` are the shared names bound to an imported module: a function of a module is not
    a container's method, so ``workflow.update(name=...)`` (the SDK's Update decorator) is no
    write; an assignment to a module's attribute still is."""

    def root(node: ast.expr) -> ast.expr:
        while isinstance(node, ast.Attribute | ast.Subscript):
            if isinstance(node, ast.Attribute) and node.attr == "__class__":
                return node  # self.__class__...: the class every run shares
            node = node.value
        return node

    def shared_root(node: ast.expr) -> bool:
        base = root(node)
        if isinstance(base, ast.Attribute):  # x.__class__
            return True
        if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "type":
            return True  # type(self)
        return isinstance(base, ast.Name) and base.id in shared

    writes: list[str] = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Global | ast.Nonlocal):
            writes.append(f"line {node.lineno}: {type(node).__name__.lower()} {node.names}")
            continue
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript) and shared_root(target):
                writes.append(f"line {node.lineno}: {ast.unparse(target)}")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in {"setattr", "delattr"} and node.args:
                if shared_root(node.args[0]):
                    writes.append(f"line {node.lineno}: {ast.unparse(node)}")
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in _MUTATING_METHODS
                and shared_root(func.value)
                and not (isinstance(func.value, ast.Name) and func.value.id in modules)
            ):
                writes.append(f"line {node.lineno}: {ast.unparse(node)}")
    return writes


@pytest.mark.slow  # imports and parses every workflow module
def test_workflow_modules_hold_no_state_a_run_could_change() -> None:
    """Workers share landed's workflow modules across runs (SANDBOX_PASSTHROUGH): no module or
    class level container one run could fill for the next, and no code that writes to state at
    either level."""
    import importlib
    import pkgutil

    import landed.workflows

    modules = [landed.workflows] + [
        importlib.import_module(f"landed.workflows.{m.name}")
        for m in pkgutil.iter_modules(landed.workflows.__path__)
    ]
    assert len(modules) >= 2, modules
    mutable_types = list | dict | set | bytearray
    for module in modules:
        shared = {name for name in vars(module) if not name.startswith("__")}
        found = {
            name: type(value).__name__
            for name, value in vars(module).items()
            if not name.startswith("__") and isinstance(value, mutable_types)
        }
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                found |= {
                    f"{name}.{attr}": type(v).__name__
                    for attr, v in vars(value).items()
                    if not attr.startswith("__") and isinstance(v, mutable_types)
                }
            # Containers inside module-level objects (a RetryPolicy's error types, say).
            if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
                found |= {
                    f"{name}.{attr}": type(v).__name__
                    for attr, v in vars(value).items()
                    if isinstance(v, mutable_types)
                }
        assert found == {}, (module.__name__, found)
        imported = frozenset(n for n, v in vars(module).items() if isinstance(v, ModuleType))
        writes = _state_writes(Path(module.__file__ or "").read_text(), shared, imported)
        assert writes == [], (module.__name__, writes)


def test_the_state_check_finds_each_kind_of_write() -> None:
    source = textwrap.dedent(
        """
        CACHE = None
        class Flow:
            def run(self):
                CACHE.append(1)
                CACHE["k"] = 1
                del CACHE["k"]
                CACHE.x += 1
                setattr(CACHE, "x", 2)
                type(self).runs = 1
                self.__class__.seen.add(1)
                Flow.count = 2
                self.mine = 1
                local = []
                local.append(1)
        def f():
            global CACHE
        @workflow.update(name="approve")
        def approve(self): ...
        workflow.seen = 1
        workflow.cache.update(x=1)
        """
    )
    writes = _state_writes(source, {"CACHE", "Flow", "f", "workflow"}, frozenset({"workflow"}))
    assert sorted((w.split(":")[0] for w in writes), key=lambda w: int(w.split()[1])) == [
        "line 5", "line 6", "line 7", "line 8", "line 9", "line 10", "line 11", "line 12",
        "line 17", "line 20", "line 21",
    ], writes  # fmt: skip
