"""The actor's path policy: what it may read and write, and the keys, the ledger and Temporal's
database cut out of it (landed.util.confine_policy), then applied by a real Landlock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from landed.util import landlock
from landed.util.confine import ConfineError, confine_mode, confine_role
from landed.util.confine_policy import Policy, PolicyError, actor_policy
from landed.util.landlock import READ, READ_DIR, WRITE, Rule


def _project(tmp_path: Path) -> Path:
    """A project as `landed dev` leaves it: act modules beside the dev home and its secrets."""
    project = tmp_path / "project"
    (project / "acts").mkdir(parents=True)
    (project / "acts" / "mine.py").write_text("DONE = True\n")
    (project / "README.md").write_text("hello\n")
    home = project / ".landed"
    for sub in ("keys", "actor", "shop"):
        (home / sub).mkdir(parents=True)
    (home / "keys" / "landed-1.key").write_text("PRIVATE\n")
    (home / "ledger.db").write_text("LEDGER\n")
    (project / "into-keys").symlink_to(home / "keys")
    return project.resolve()


def test_a_readable_project_is_opened_around_the_dev_home(tmp_path: Path) -> None:
    project = _project(tmp_path)
    home = project / ".landed"
    policy = Policy(read=(str(project),), write=(str(home / "actor"),), deny=(str(home),))
    rules = set(policy.rules())
    assert Rule(str(project), READ_DIR) in rules  # names only, for the import system
    assert Rule(str(project / "acts"), READ) in rules
    assert Rule(str(project / "README.md"), READ) in rules
    assert Rule(str(home / "actor"), WRITE) in rules
    reached = {r.path for r in rules if r.access & landlock.READ_FILE}
    # Neither the home, nor its keys, nor a symlink that leads into them.
    assert not [p for p in reached if p.startswith(str(home)) and p != str(home / "actor")]
    assert str(project / "into-keys") not in reached


def test_a_writable_directory_over_the_keys_is_refused_with_the_fix(tmp_path: Path) -> None:
    project = _project(tmp_path)
    home = project / ".landed"
    for root in (project, home):
        with pytest.raises(PolicyError, match=r"keep what acts write in a directory of its own"):
            Policy(read=(), write=(str(root),), deny=(str(home),)).rules()
    # Inside the home, in a directory of its own (the demo's shop): allowed.
    Policy(read=(), write=(str(home / "shop"),), deny=(str(home),)).rules()


def test_the_policy_comes_from_the_actors_own_settings(tmp_path: Path) -> None:
    project = _project(tmp_path)
    home = project / ".landed"
    extra, more = tmp_path / "extra", tmp_path / "more"
    extra.mkdir()
    more.mkdir()
    environ = {
        "LANDED_ACTOR_DENY_PATHS": str(home),
        "LANDED_ACTOR_ALLOW_PATHS": str(extra),
        "LANDED_ACTOR_READ_PATHS": str(more),
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
    }
    credentials = {
        "shop": f"sqlite:///{home / 'shop' / 'shop.db'}",
        "rel": "sqlite:///data/app.db",
        "mem": "sqlite:///:memory:",
        "site": "https://example.test/api",
    }
    cwd = home / "actor"
    (cwd / "data").mkdir()
    policy = actor_policy(
        environ, credentials, cwd=str(cwd), tmp=str(cwd / "tmp"), sys_path=[str(project)]
    )
    assert policy.deny == (str(home),)
    assert {str(home / "shop"), str(cwd / "data"), str(cwd), str(extra)} <= set(policy.write)
    assert {str(project), str(more), "/etc/ssl/certs/ca-certificates.crt"} <= set(policy.read)
    assert f"/proc/{os.getpid()}" in policy.read and "/proc" not in policy.read
    policy.rules()  # nothing writable holds the home


def test_confinement_modes_are_named_and_off_is_said_loudly() -> None:
    assert confine_mode("actor", {}) == "auto"
    assert confine_mode("runner", {"LANDED_RUNNER_CONFINE": "Strict"}) == "strict"
    with pytest.raises(ConfineError, match=r"LANDED_VERIFIER_CONFINE='maybe'.*auto, strict or off"):
        confine_mode("verifier", {"LANDED_VERIFIER_CONFINE": "maybe"})
    said: list[str] = []
    confine_role("actor", {"LANDED_ACTOR_CONFINE": "off"}, say=said.append)
    assert said == [
        "landed worker actor: confinement is OFF (LANDED_ACTOR_CONFINE=off): act code can reach "
        "every file this user can read, the keys and the ledger"
    ]


_CHILD = """
import os, sys
from landed.util.confine import confine_role
print(confine_role("actor", os.environ, {}), file=sys.stderr)
for path in sys.argv[1:]:
    try:
        open(path, "rb").read(1)
        print("read", path)
    except OSError as exc:
        print(type(exc).__name__, path)
"""


@pytest.mark.skipif(landlock.abi() == 0, reason="this kernel offers no Landlock")
def test_a_confined_process_reads_its_project_and_not_the_dev_home(tmp_path: Path) -> None:
    project = _project(tmp_path)
    home = project / ".landed"
    env = {
        **os.environ,
        "LANDED_ACTOR_DENY_PATHS": str(home),
        "TMPDIR": str(home / "actor"),
        "PYTHONPATH": str(project),
    }
    wanted = [
        project / "acts" / "mine.py",
        home / "keys" / "landed-1.key",
        home / "ledger.db",
        project / "into-keys" / "landed-1.key",
        Path(f"/proc/{os.getppid()}/environ"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *map(str, wanted)],
        cwd=home / "actor",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = dict(reversed(line.split(" ", 1)) for line in done.stdout.splitlines())
    assert got == {
        str(wanted[0]): "read",
        **{str(p): "PermissionError" for p in wanted[1:]},
    }, done.stderr
    assert "Landlock ABI" in done.stderr


_UNDUMPABLE_CHILD = """
import ctypes, os, sys, time
from landed.util.confine import confine_role
if os.geteuid() == 0:
    os.setuid(65534)  # a user of its own, so its /proc owner tells what changed
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again, as a process started by it is
confine_role("verifier", os.environ)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
@pytest.mark.parametrize("mode", ["auto", "off"])
def test_an_undumpable_role_hands_its_proc_files_to_root(mode: str) -> None:
    """A process of the same user reads /proc/PID/environ when it owns it; undumpable, the
    kernel gives those files to root, and the user's other processes are refused."""
    env = {**os.environ, "LANDED_VERIFIER_CONFINE": mode}
    child = subprocess.Popen(
        [sys.executable, "-c", _UNDUMPABLE_CHILD],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        owner = Path(f"/proc/{child.pid}/environ").stat().st_uid
    finally:
        child.kill()
        _, err = child.communicate(timeout=10)
    user = 65534 if os.geteuid() == 0 else os.geteuid()
    assert owner == (0 if mode == "auto" else user), err
    assert ("undumpable" if mode == "auto" else "confinement is OFF") in err
