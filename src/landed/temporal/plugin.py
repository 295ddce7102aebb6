"""The one Temporal plugin every landed client and worker goes through, and how they connect."""

from __future__ import annotations

import dataclasses
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from types import CodeType
from typing import Any, cast

from temporalio.client import Client
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.worker import Interceptor as WorkerInterceptor
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.workflow import _Definition

from landed.temporal.connection import ConnectionSettingsError, connect_options, worker_identity

try:
    from temporalio.worker.workflow_sandbox._in_sandbox import InSandbox
    from temporalio.worker.workflow_sandbox._runner import _Instance
except ImportError:  # pragma: no cover - an SDK without them runs its own sandbox unchanged
    _Instance = None  # type: ignore[assignment,misc]
    InSandbox = None  # type: ignore[assignment,misc]

# The context shortcut below relies on this SDK shape (sdk-python 1.35); any other shape gets
# the SDK's own path.
_DIRECT_CONTEXT = (
    _Instance is not None
    and InSandbox is not None
    and all(
        hasattr(cls, name)
        for cls in (_Instance, InSandbox)
        for name in ("get_serialization_context", "get_external_store_context")
    )
)

__all__ = [
    "PLUGIN_NAME",
    "SANDBOX_PASSTHROUGH",
    "ConnectionSettingsError",
    "connect",
    "connect_options",
    "landed_plugin",
    "strict_workflow_runner",
    "tracing_interceptors",
    "worker_identity",
]

PLUGIN_NAME = "landed"
# Where landed's workflow code lives (workflows/, installed under this name).
_WORKFLOW_PACKAGE = "landed.workflows"

# Modules the workflow sandbox shares with the worker instead of re-importing per run. Each is
# deterministic (no I/O, no clock, no randomness at import or in what workflow code calls) and
# keeps no per-workflow state at module level, so sharing it cannot leak one workflow's state
# into another; re-importing them per run would cost milliseconds per workflow task, and with
# max_cached_workflows=0 per activation.
SANDBOX_PASSTHROUGH: tuple[str, ...] = (
    # pydantic builds validators at class creation; re-importing it per run is slow, and the
    # pydantic data converter hands the workflow instances of the worker's own classes.
    "pydantic",
    "pydantic_core",
    # pydantic's runtime dependencies, imported with it.
    "annotated_types",
    "typing_inspection",
    "typing_extensions",
    # JSON encoding used by landed's models; a C extension that must not be loaded twice.
    "orjson",
    # Imported by landed's settings module through landed/__init__; pure configuration code.
    "pydantic_settings",
    # Signature checks in the workflow (Ed25519 verification is deterministic); a compiled
    # extension that cannot be imported twice in one process.
    "cryptography",
    # landed's pure models: TaskSpec and the step inputs cross the workflow boundary, so the
    # workflow must see the very classes the converter instantiates.
    "landed.task.spec",
    "landed.receipts.model",
    "landed.probes.contract",
    "landed.receipts.ladder",
    # The grading code the checker uses; the workflow computes the verdict with it. Pure.
    "landed.receipts.grading",
    # Receipt assembly from spec, act report and proof items. Pure.
    "landed.task.assemble",
    # Verifying the verifier's signatures against the runner's trusted keys. Pure.
    "landed.signing",
    # landed's own workflow code (AgentTask). Re-imported per run, its class body and the
    # inspection @workflow.defn makes of it cost the runner about 3 ms of CPU per task
    # (measured: an eighth of its CPU). Its module level holds only constants, and no code in
    # it writes to them (tested); each run's state lives on its instance, so one copy serves
    # every run. What sharing gives up: a call the sandbox would stop (datetime.now, random)
    # made from this module's own code is not stopped at run time. The test suite therefore
    # runs its in-process runners, and replays every recorded history, under the SDK's sandbox
    # with this module re-imported as the SDK does by default (strict_workflow_runner; a
    # runner's LANDED_RUNNER_SANDBOX=strict), where such a call fails the workflow task.
    _WORKFLOW_PACKAGE,
)
# The sandbox as the SDK runs workflow code by default (each run re-imports the workflow
# module with the restricted standard library), with landed's pure core still shared.
_STRICT_PASSTHROUGH: tuple[str, ...] = tuple(
    m for m in SANDBOX_PASSTHROUGH if m != _WORKFLOW_PACKAGE
)


def _core_modules() -> tuple[str, ...]:
    """Every other module of landed's core (src/landed/_*.py).

    Importing the workflow module imports the ``landed`` package first, and its __init__ imports
    the public API; with each core module shared, that costs a dict lookup per name instead of
    executing the core again per workflow run. Core modules never import workflows or
    activities (the house plan forbids it), and workflow code calls none of their I/O.
    """
    import pkgutil

    import landed

    return tuple(
        f"landed.{m.name}"
        for m in pkgutil.iter_modules(landed.__path__)
        if not m.name.startswith("__") and m.name not in ("workflows", "activities")
    )


def tracing_interceptors() -> list[ClientInterceptor | WorkerInterceptor]:
    """The single place where tracing joins every client and worker (none yet).

    Telemetry adds its OpenTelemetry interceptor here; SimplePlugin applies client interceptors
    to clients and worker interceptors to workers and replayers.
    """
    return []


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles each version of a file once per process."""

    def __init__(self, fullname: str, path: str, cache: _CompileOnce) -> None:
        super().__init__(fullname, path)
        self._cache = cache

    def get_code(self, fullname: str) -> CodeType | None:
        stat = os.stat(self.path)
        # Keyed like Python's own bytecode cache: an edited file compiles again.
        key = (self.path, stat.st_mtime_ns, stat.st_size)
        code = self._cache.code.get(key)
        if code is None:
            code = super().get_code(fullname)
            if code is not None:
                self._cache.code[key] = code
        return code


class _CompileOnce(importlib.abc.MetaPathFinder):
    """Serves the modules the sandbox re-imports for each workflow run from code compiled once.

    The sandbox executes a workflow's module (and the packages above it) afresh for every run,
    so a run starts from clean module state: a user's workflow module, the ``landed`` package
    above landed's own, and landed's workflow module itself under the strict runner. Compiling
    that source again each time is the costliest part of starting a run when Python has no
    bytecode cache to read (an editable install, PYTHONDONTWRITEBYTECODE, a read-only tree).
    Executing the same code object again is what Python does with a .pyc; each run still gets
    fresh module state.
    """

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.code: dict[tuple[str, int, int], CodeType] = {}
        # Where each module was found (file, package search path): finding it again walks the
        # import path with a stat per entry, for an answer that doesn't change.
        self._found: dict[tuple[str, tuple[str, ...] | None], tuple[str, list[str] | None]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        key = (fullname, tuple(path) if path is not None else None)
        found = self._found.get(key)
        if found is not None and os.path.isfile(found[0]):
            origin, locations = found
            return importlib.util.spec_from_file_location(
                fullname,
                origin,
                loader=_SourceLoader(fullname, origin, self),
                submodule_search_locations=None if locations is None else list(locations),
            )
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: importlib.machinery.ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if type(loader) is importlib.machinery.SourceFileLoader and spec.origin:
                spec.loader = _SourceLoader(fullname, spec.origin, self)
                locations = spec.submodule_search_locations
                self._found[key] = (spec.origin, None if locations is None else list(locations))
            return spec
        return None


_COMPILE_ONCE = _CompileOnce()
_COMPILE_ONCE_LOCK = threading.Lock()


def _compile_once(module: str) -> None:
    """Serve ``module`` and its parent packages through the compile-once finder."""
    parts = module.split(".")
    with _COMPILE_ONCE_LOCK:
        _COMPILE_ONCE.names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        if _COMPILE_ONCE not in sys.meta_path:
            sys.meta_path.insert(0, _COMPILE_ONCE)


@functools.lru_cache(maxsize=64)
def _sandbox_code(source: str) -> CodeType:
    return compile(source, "<string>", "exec", dont_inherit=True)


if _Instance is not None and hasattr(_Instance, "_run_code"):

    class _CompiledInstance(_Instance):
        """The SDK's sandboxed instance, running its fixed snippets from code compiled once.

        The sandbox enters itself by ``exec`` of a few fixed source strings: on every
        activation, and for every payload of it when the SDK asks the workflow for its
        serialization context (several passes per activation). ``exec`` of a string compiles
        it again each time, which was the largest single cost in the runner's CPU profile;
        executing the same code object is what the string would compile to, every time.
        """

        def _run_code(self, code: str, **extra_globals: Any) -> None:
            super()._run_code(cast(str, _sandbox_code(code)), **extra_globals)

        def get_serialization_context(self, command_info: Any) -> Any:
            # Asked up to six times per payload of every activation. The answer is plain data
            # read from the instance (namespace, workflow id, the pending command), built from
            # temporalio's own classes, which the sandbox shares with the worker; entering the
            # sandbox's import hooks for it costs more than the work and guards nothing.
            inner: Any = self.globals_and_locals.get("__temporal_in_sandbox")
            if inner is None or not _DIRECT_CONTEXT:
                return super().get_serialization_context(command_info)
            return inner.get_serialization_context(command_info)

        def get_external_store_context(self, command_info: Any) -> Any:
            inner: Any = self.globals_and_locals.get("__temporal_in_sandbox")
            if inner is None or not _DIRECT_CONTEXT:
                return super().get_external_store_context(command_info)
            return inner.get_external_store_context(command_info)

else:  # pragma: no cover - an SDK without it runs its own sandbox unchanged
    _CompiledInstance = None  # type: ignore[assignment,misc]


@dataclasses.dataclass(frozen=True)
class _SandboxRunner(SandboxedWorkflowRunner):
    """The SDK's sandbox; each workflow module it re-imports per run is compiled only once,
    and so is each snippet the sandbox runs to enter itself."""

    def prepare_workflow(self, defn: _Definition) -> None:
        if defn.cls.__module__ != "__main__":
            _compile_once(defn.cls.__module__)
        super().prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        if _CompiledInstance is None:  # pragma: no cover
            return super().create_instance(det)
        return _CompiledInstance(det, self.runner_class, self.restrictions)


@dataclasses.dataclass(frozen=True)
class _StrictRunner(_SandboxRunner):
    """The plugin's sandbox with landed's workflow module re-imported for every run."""


def _with_passthrough(existing: WorkflowRunner | None) -> WorkflowRunner:
    if isinstance(existing, _StrictRunner):
        return existing  # asked for by name (the runner's sandbox=strict): share nothing more
    runner = existing if existing is not None else SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner  # an unsandboxed runner shares every module already
    modules = (*SANDBOX_PASSTHROUGH, *_core_modules())
    restrictions = runner.restrictions.with_passthrough_modules(*modules)
    if type(runner) is not SandboxedWorkflowRunner:
        return dataclasses.replace(runner, restrictions=restrictions)  # a caller's own runner
    sandbox = _SandboxRunner(restrictions=restrictions, runner_class=runner.runner_class)
    sandbox.set_worker_level_failure_exception_types(runner._worker_level_failure_exception_types)
    return sandbox


def strict_workflow_runner() -> WorkflowRunner:
    """The sandbox with landed's workflow code re-imported for every run, as the SDK does by
    default, so its restricted standard library stops any nondeterministic call that code
    makes. Workers share that code unless their settings say sandbox=strict; the test suite's
    in-process runners and its replay of recorded histories run under this one."""
    restrictions = SandboxedWorkflowRunner().restrictions.with_passthrough_modules(
        *_STRICT_PASSTHROUGH, *_core_modules()
    )
    return _StrictRunner(restrictions=restrictions)


def landed_plugin() -> SimplePlugin:
    """The plugin: pydantic data converter, sandbox passthroughs, tracing interceptors."""
    return SimplePlugin(
        PLUGIN_NAME,
        data_converter=pydantic_data_converter,
        interceptors=tracing_interceptors(),
        workflow_runner=_with_passthrough,
    )


async def connect(
    *,
    identity: str,
    address: str | None = None,
    namespace: str | None = None,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_plugins: Sequence[SimplePlugin] = (),
) -> Client:
    """Client.connect through the landed plugin; workers built on this client inherit it."""
    opts = connect_options(address=address, namespace=namespace, profile=profile, env=env)
    return await Client.connect(
        plugins=[landed_plugin(), *extra_plugins], identity=identity, **opts
    )
