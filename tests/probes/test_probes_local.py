"""Probes on this machine: real subprocesses, real files, a real git repository."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from landed.probes.contract import (
    CommandProbe,
    Contains,
    Count,
    Equals,
    FileProbe,
    GitProbe,
    JsonPath,
    NonEmpty,
    Observation,
    Outcome,
    Regex,
    probe_problem,
)
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry


async def see(
    probe: object, expect: object, sources: dict[str, object] | None = None
) -> Observation:
    async with SourceRegistry(sources or {}, allow_unsourced=True) as registry:  # type: ignore[arg-type]
        return await observe(probe, expect, registry=registry, observer="test-verifier")


# --- command ------------------------------------------------------------------------------------


async def test_command_runs_argv_without_a_shell() -> None:
    obs = await see(CommandProbe(argv=["echo", "$HOME", "|", "wc"]), Equals(value="$HOME | wc"))
    assert obs.outcome is Outcome.PASS


async def test_command_shell_only_when_asked() -> None:
    obs = await see(CommandProbe(argv=["echo 4 | tr 4 5"], shell=True), Count(value=5))
    assert obs.outcome is Outcome.PASS
    with pytest.raises(ValueError, match="exactly one string"):
        CommandProbe(argv=["echo", "1"], shell=True)


async def test_command_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDED_TEST_LEAK", "should-not-pass")
    obs = await see(CommandProbe(argv=["env"]), NonEmpty())
    assert obs.evidence is not None and "LANDED_TEST_LEAK" not in obs.evidence.text
    given = await see(
        CommandProbe(argv=["sh", "-c", "echo $GREETING"], env={"GREETING": "hi"}),
        Equals(value="hi"),
    )
    assert given.outcome is Outcome.PASS


async def test_command_source_env_overrides_the_probe() -> None:
    sources = {"db-cli": {"kind": "command", "env": {"TARGET": "from-config"}}}
    probe = CommandProbe(
        source="db-cli", argv=["sh", "-c", "echo $TARGET"], env={"TARGET": "from-probe"}
    )
    obs = await see(probe, Equals(value="[redacted]"), sources)
    # The configured value is a credential: it is redacted from the evidence it appears in.
    assert obs.evidence is not None and obs.evidence.text == "[redacted]\n"


@pytest.mark.slow
async def test_command_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild-alive"
    script = f"(sleep 1; touch {marker}) & sleep 30"
    started = time.monotonic()
    obs = await see(CommandProbe(argv=[script], shell=True, timeout_s=0.3), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "did not finish within 0.3s" in obs.message
    assert time.monotonic() - started < 1
    time.sleep(1.5)
    assert not marker.exists(), "the background grandchild outlived the timeout"


@pytest.mark.slow
async def test_command_that_leaves_a_child_holding_the_pipe_still_finishes() -> None:
    started = time.monotonic()
    obs = await see(
        CommandProbe(argv=["sleep 20 & echo 45"], shell=True, timeout_s=10), Count(value=45)
    )
    assert obs.outcome is Outcome.PASS
    assert time.monotonic() - started < 3


async def test_command_nonzero_exit_is_a_probe_error_with_its_output_as_evidence() -> None:
    obs = await see(
        CommandProbe(argv=["sh", "-c", "echo partial; echo oops >&2; exit 4"]), Count(value=1)
    )
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "code 4" in obs.message and "oops" in obs.message
    assert obs.evidence is not None and obs.evidence.text == "partial\n"


async def test_a_failing_commands_message_quotes_the_end_of_its_stderr() -> None:
    line = "head -c 10000 /dev/zero | tr '\\0' . >&2; echo 'FATAL: disk full' >&2; exit 2"
    obs = await see(CommandProbe(argv=[line], shell=True), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR
    assert obs.message.endswith("FATAL: disk full"), obs.message[-80:]


async def test_a_secret_cut_by_the_quoted_stderr_is_not_shown_in_part() -> None:
    secret = "sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    sources = {"ops": {"kind": "command", "env": {"API_TOKEN": secret}, "allow_any_command": True}}
    for pad in (470, 480, 490):  # the cut falls inside the secret
        line = f'echo "$API_TOKEN$(printf "%{pad}s" "")x" >&2; exit 1'
        obs = await see(CommandProbe(source="ops", shell=True, argv=[line]), NonEmpty(), sources)
        assert obs.outcome is Outcome.PROBE_ERROR
        assert secret[-12:] not in obs.message, obs.message[:120]


async def test_a_missing_working_directory_is_named_not_the_program(tmp_path: Path) -> None:
    sources = {"ops": {"kind": "command", "path": str(tmp_path / "gone"), "commands": ["echo hi"]}}
    obs = await see(CommandProbe(source="ops", argv=["echo", "hi"]), Contains(value="hi"), sources)
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "working directory" in obs.message and "no program" not in obs.message, obs.message


async def test_a_nul_or_a_bad_env_name_is_refused_by_name_not_read() -> None:
    # Checked before the read (and at submit), not when the model is built: a task a workflow
    # already holds must still load when it replays.
    from landed.probes.verdict import InvalidContract

    for probe, field in (
        (FileProbe(path="a\x00b"), "path"),
        (CommandProbe(argv=["echo", "a\x00"]), "argv"),
        (CommandProbe(argv=["echo"], cwd="x\x00"), "cwd"),
        (CommandProbe(argv=["echo"], env={"A=B": "x"}), "env name"),
        (CommandProbe(argv=["echo"], env={"A": "x\x00"}), "env A"),
        (GitProbe(ref="main\x00"), "ref"),
        (GitProbe(ref=":a.txt"), "names a file in the index"),
    ):
        assert field in (probe_problem(probe) or ""), probe
        with pytest.raises(InvalidContract, match=field):
            await see(probe, NonEmpty())


async def test_command_ok_exit_codes_for_grep_count(tmp_path: Path) -> None:
    (tmp_path / "log").write_text("nothing here\n")
    probe = CommandProbe(argv=["grep", "-c", "ERROR", str(tmp_path / "log")], ok_exit_codes=[0, 1])
    obs = await see(probe, Count(value=45))
    assert obs.outcome is Outcome.EMPTY and obs.value == 0


async def test_exit_is_seen_without_pidfd_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kernels and platforms without pidfd_open take the polling path; remove it to run that path.
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    obs = await see(CommandProbe(argv=["echo", "45"]), Count(value=45))
    assert obs.outcome is Outcome.PASS
    slow = await see(CommandProbe(argv=["sleep", "5"], timeout_s=0.2), NonEmpty())
    assert slow.outcome is Outcome.PROBE_ERROR


async def test_missing_program_is_a_probe_error() -> None:
    obs = await see(CommandProbe(argv=["landed-no-such-program"]), NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR and "no program" in obs.message


async def test_hundred_megabytes_of_output_is_bounded_in_time_and_memory() -> None:
    probe = CommandProbe(argv=["head", "-c", "100000000", "/dev/zero"], timeout_s=20)
    started = time.monotonic()
    obs = await see(probe, Contains(value="landed"))
    assert time.monotonic() - started < 10
    assert obs.outcome is Outcome.MISMATCH
    assert obs.evidence is not None
    assert obs.evidence.total_bytes == 100_000_000
    assert obs.evidence.sha256 == hashlib.sha256(b"\0" * 100_000_000).hexdigest()
    assert obs.evidence.truncated and len(obs.evidence.text.encode()) <= 5 * 64 * 1024


async def test_a_task_command_enters_its_cwd_without_following_symlinks(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "out").symlink_to("/")
    (tmp_path / "current").symlink_to(tmp_path / "sub")
    sources = {"tools": {"kind": "command", "path": str(tmp_path), "allow_any_command": True}}

    async def run(cwd: str, task_probes: bool) -> Observation:
        async with SourceRegistry(sources, allow_unsourced=True) as registry:  # type: ignore[arg-type]
            registry.task_probes = task_probes
            probe = CommandProbe(argv=["pwd", "-P"], source="tools", cwd=cwd)
            return await observe(probe, NonEmpty(), registry=registry, observer="t")

    obs = await run("sub/deeper", True)
    assert obs.outcome is Outcome.PASS and obs.evidence is not None
    assert obs.evidence.text.strip() == str((tmp_path / "sub" / "deeper").resolve())
    # What the verifier's policy checked could be swapped for a link before the process
    # starts; for a task's probe the reader itself never follows one, inside or out.
    for cwd in ("out", "out/etc", "current", "missing", "../sub", "/tmp"):
        obs = await run(cwd, True)
        assert obs.outcome is Outcome.PROBE_ERROR, (cwd, obs.message)
        assert "below the source" in obs.message or "relative path" in obs.message, obs.message
    # The CLI runs the user's own probes: there a link is the user's to follow.
    obs = await run("current", False)
    assert obs.outcome is Outcome.PASS and obs.evidence is not None
    assert obs.evidence.text.strip() == str((tmp_path / "sub").resolve())


async def test_endless_output_is_cut_at_the_read_limit() -> None:
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        obs = await observe(
            CommandProbe(argv=["yes"], timeout_s=20),
            NonEmpty(),
            registry=registry,
            observer="t",
            read_limit=4 * 1024 * 1024,
        )
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "more than 4194304 bytes" in obs.message


async def test_binary_invalid_utf8_and_ansi_are_shown_escaped() -> None:
    script = "printf '\\033[2J\\033[31mred\\377\\376\\000done'"
    obs = await see(CommandProbe(argv=[script], shell=True), Contains(value="done"))
    assert obs.outcome is Outcome.PASS
    assert obs.evidence is not None
    shown = obs.evidence.text
    assert "\x1b" not in shown and "\x00" not in shown
    assert "\\x1b[2J" in shown and "\\x00done" in shown and "\ufffd" in shown
    assert obs.evidence.total_bytes == 19


async def test_count_from_a_command_with_hostile_number_text() -> None:
    obs = await see(CommandProbe(argv=["printf", "\\033[32m45\\033[0m"]), Count(value=45))
    assert obs.outcome is Outcome.MISMATCH  # coloured "45" is not the number 45


# --- file ---------------------------------------------------------------------------------------


async def test_file_exists_size_sha256_contains(tmp_path: Path) -> None:
    body = b'{"rows": 45}\n'
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_bytes(body)
    sources = {"reports": {"kind": "file", "path": str(tmp_path)}}
    digest = hashlib.sha256(body).hexdigest()
    probe = FileProbe(source="reports", path="out/report.json", size=len(body), sha256=digest)
    obs = await see(probe, JsonPath(path="$.rows", value=45), sources)
    assert obs.outcome is Outcome.PASS
    assert obs.expectation == f"file(size={len(body)}, sha256={digest}) and json_path($.rows == 45)"
    wrong = FileProbe(source="reports", path="out/report.json", size=3)
    assert (await see(wrong, NonEmpty(), sources)).outcome is Outcome.MISMATCH
    bad_hash = FileProbe(source="reports", path="out/report.json", sha256="0" * 64)
    assert (await see(bad_hash, NonEmpty(), sources)).outcome is Outcome.MISMATCH
    assert (
        await see(
            FileProbe(source="reports", path="out/report.json"), Contains(value="45"), sources
        )
    ).outcome is Outcome.PASS


async def test_a_symlink_swapped_in_after_the_check_never_reads_outside_the_root(
    tmp_path: Path,
) -> None:
    """Something keeps swapping the probed name between a file and a symlink out of the root
    (a process the agent left behind): the file read is checked on what was opened."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "private.txt").write_text("PRIVATE-OUTSIDE")
    name = root / "report.txt"
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                name.unlink()
            name.write_text("inside")
            with contextlib.suppress(OSError):
                name.unlink()
            with contextlib.suppress(OSError):
                name.symlink_to(outside / "private.txt")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        async with SourceRegistry({"reports": {"kind": "file", "path": str(root)}}) as registry:
            for _ in range(1000):
                obs = await observe(
                    FileProbe(source="reports", path="report.txt"),
                    NonEmpty(),
                    registry=registry,
                    observer="test-verifier",
                )
                assert "PRIVATE" not in (obs.evidence.text if obs.evidence else ""), obs
    finally:
        stop.set()
        swapper.join(timeout=5)


async def test_a_size_claim_is_judged_on_the_whole_file_past_the_read_limit(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * (5 << 20))
    async with SourceRegistry({"r": {"kind": "file", "path": str(tmp_path)}}) as registry:
        for claimed in (2 << 20, (1 << 20) + 1):  # what a read stopped at 1 MiB had counted
            obs = await observe(
                FileProbe(source="r", path="big.bin", size=claimed),
                NonEmpty(),
                registry=registry,
                observer="v",
                read_limit=1 << 20,
            )
            assert obs.outcome is not Outcome.PASS, (claimed, obs.message)
            assert str(5 << 20) in obs.message, obs.message


async def test_without_proc_a_file_under_a_root_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without /proc the opened file's real path cannot be checked against the root, and a
    # symlink swapped in after the name was checked would go unseen: refused, not read.
    import landed.probes.local as local

    (tmp_path / "report.txt").write_text("inside")
    monkeypatch.setattr(local, "_opened_path", lambda fd: None)
    obs = await see(
        FileProbe(source="r", path="report.txt"),
        NonEmpty(),
        {"r": {"kind": "file", "path": str(tmp_path)}},
    )
    assert obs.outcome is Outcome.PROBE_ERROR and "/proc" in obs.message, obs.message


async def test_a_symlink_loop_is_named(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    obs = await see(
        FileProbe(source="r", path="a"), NonEmpty(), {"r": {"kind": "file", "path": str(tmp_path)}}
    )
    assert obs.outcome is Outcome.PROBE_ERROR and "symlink loop" in obs.message, obs.message


async def test_missing_file_is_empty_and_empty_file_is_empty(tmp_path: Path) -> None:
    sources = {"reports": {"kind": "file", "path": str(tmp_path)}}
    missing = await see(FileProbe(source="reports", path="nope.csv"), NonEmpty(), sources)
    assert missing.outcome is Outcome.EMPTY and "no file" in missing.message
    (tmp_path / "blank.csv").write_bytes(b"")
    blank = await see(
        FileProbe(source="reports", path="blank.csv", size=0), Count(value=0), sources
    )
    assert blank.outcome is Outcome.EMPTY  # an empty file is not a count of 0


async def test_file_paths_cannot_leave_the_source_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").write_text("s")
    (root / "link").symlink_to(tmp_path / "secret")
    sources = {"reports": {"kind": "file", "path": str(root)}}
    for path in ("../secret", "link", str(tmp_path / "secret")):
        obs = await see(FileProbe(source="reports", path=path), NonEmpty(), sources)
        assert obs.outcome is Outcome.PROBE_ERROR, path


async def test_large_file_hashed_in_full_content_capped(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:
        for _ in range(20):
            fh.write(os.urandom(1024 * 1024))
    probe = FileProbe(
        path=str(big), max_bytes=1024, sha256=hashlib.sha256(big.read_bytes()).hexdigest()
    )
    obs = await see(probe, NonEmpty())
    assert obs.outcome is Outcome.PASS
    assert obs.evidence is not None and obs.evidence.total_bytes == 20 * 1024 * 1024


async def test_a_regex_is_not_judged_on_output_cut_short(tmp_path: Path) -> None:
    log = tmp_path / "deploy.log"
    log.write_text("step 1 ok\nstatus: done\n" + "x" * 4096 + "\nstatus: failed\n")
    cut = dict(path=str(log), max_bytes=23)  # the kept part ends right after "status: done"
    # The whole file does not end in "done": a pattern anchored at the end must not pass on the
    # part that was kept, nor one whose lookahead finds nothing after the cut.
    for pattern in (r"status: done\s*\Z", r"status: done(?![\s\S]*failed)"):
        obs = await see(FileProbe(**cut), Regex(value=pattern))
        assert obs.outcome is Outcome.MISMATCH, (pattern, obs.message)
        assert "judged only on whole output" in obs.message
    # A substring found in the kept part is in the whole file: contains still passes.
    assert (await see(FileProbe(**cut), Contains(value="status: done"))).outcome is Outcome.PASS
    # Nor does the kept part equal a string the whole file is not.
    obs = await see(FileProbe(path=str(log), max_bytes=9), Equals(value="step 1 ok"))
    assert obs.outcome is Outcome.MISMATCH and "cannot equal" in obs.message, obs.message
    # Read whole, the same patterns are judged (and fail on the file's real end).
    obs = await see(FileProbe(path=str(log)), Regex(value=r"status: failed\s*\Z"))
    assert obs.outcome is Outcome.PASS


# --- git ----------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.test",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.test",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    git(path, "tag", "v1")
    return path


async def test_git_commit_and_ref_exist(repo: Path) -> None:
    sources = {"site-repo": {"kind": "git", "path": str(repo)}}
    head = git(repo, "rev-parse", "HEAD")
    for ref in ("main", "v1", head, head[:10]):
        obs = await see(GitProbe(source="site-repo", ref=ref), Equals(value=head), sources)
        assert obs.outcome is Outcome.PASS, ref
    gone = await see(GitProbe(source="site-repo", ref="feature/never-pushed"), NonEmpty(), sources)
    assert gone.outcome is Outcome.EMPTY
    assert (
        await see(GitProbe(source="site-repo", ref="0" * 40), NonEmpty(), sources)
    ).outcome is Outcome.EMPTY


async def test_git_ref_cannot_smuggle_options(repo: Path, tmp_path: Path) -> None:
    sources = {"site-repo": {"kind": "git", "path": str(repo)}}
    target = tmp_path / "written"
    obs = await see(GitProbe(source="site-repo", ref=f"--output={target}"), NonEmpty(), sources)
    assert obs.outcome is not Outcome.PASS
    assert not target.exists()


async def test_git_not_a_repository_is_a_probe_error(tmp_path: Path) -> None:
    sources = {"site-repo": {"kind": "git", "path": str(tmp_path)}}
    obs = await see(GitProbe(source="site-repo", ref="main"), NonEmpty(), sources)
    assert obs.outcome is Outcome.PROBE_ERROR


async def test_git_runs_nothing_the_repositorys_config_names(repo: Path, tmp_path: Path) -> None:
    # The repository is the agent's: a partial-clone remote would make git fetch a missing
    # commit through core.sshCommand, as the verifier; an index read would run core.fsmonitor.
    marker = tmp_path / "ran"
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialclone", "origin"),
        ("remote.origin.url", "ssh://example.invalid/x"),
        ("remote.origin.promisor", "true"),
        ("protocol.ssh.allow", "always"),
        ("core.sshCommand", f"touch {marker} #"),
        ("core.fsmonitor", f"touch {marker}; false #"),
    ):
        git(repo, "config", key, value)
    sources = {"site-repo": {"kind": "git", "path": str(repo)}}
    for ref in ("1" * 40, "HEAD", ":/first"):
        await see(GitProbe(source="site-repo", ref=ref), NonEmpty(), sources)
    assert not marker.exists()


async def test_a_partial_clone_is_not_fetched_into(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    git(origin, "config", "uploadpack.allowFilter", "true")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(origin, "commit", "-q", "--allow-empty", "-m", "one")
    git(origin, "checkout", "-q", "-b", "other")
    git(origin, "commit", "-q", "--allow-empty", "-m", "two")
    remote_only = git(origin, "rev-parse", "HEAD")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--single-branch", "-b", "main",
        f"file://{origin}", str(clone))  # fmt: skip

    def objects() -> list[Path]:
        return sorted(p for p in (clone / ".git" / "objects").rglob("*") if p.is_file())

    before = objects()
    sources = {"site-repo": {"kind": "git", "path": str(clone)}}
    obs = await see(GitProbe(source="site-repo", ref=remote_only), NonEmpty(), sources)
    assert objects() == before  # nothing written into the repository
    assert obs.outcome is not Outcome.PASS, obs.message


async def test_a_git_source_may_be_a_folder_of_its_repository(repo: Path) -> None:
    # A service folder of a monorepo reads the repository it lies in.
    inside = repo / "services" / "site"
    inside.mkdir(parents=True)
    head = git(repo, "rev-parse", "HEAD")
    sources = {"site": {"kind": "git", "path": str(inside)}}
    obs = await see(GitProbe(source="site", ref="main"), Equals(value=head), sources)
    assert obs.outcome is Outcome.PASS, obs.message


async def test_a_replace_ref_does_not_make_a_commit_exist(repo: Path) -> None:
    # refs/replace/<blob> -> a commit would let the blob's sha pass as a commit that was made.
    head = git(repo, "rev-parse", "HEAD")
    blob = git(repo, "rev-parse", "HEAD:a.txt")
    git(repo, "update-ref", f"refs/replace/{blob}", head)
    sources = {"site-repo": {"kind": "git", "path": str(repo)}}
    obs = await see(GitProbe(source="site-repo", ref=blob), NonEmpty(), sources)
    assert obs.outcome is not Outcome.PASS, obs.message


async def test_git_regex_on_the_resolved_sha(repo: Path) -> None:
    sources = {"site-repo": {"kind": "git", "path": str(repo)}}
    obs = await see(GitProbe(source="site-repo", ref="v1"), Regex(value=r"^[0-9a-f]{40}$"), sources)
    assert obs.outcome is Outcome.PASS


def test_the_suite_tests_this_source_tree_not_an_installed_copy() -> None:
    # A stale copy (build/lib, site-packages) would make every test here test old code.
    import landed
    import landed.probes.local

    src = Path(__file__).resolve().parents[2] / "src" / "landed"
    assert Path(landed.__file__).resolve().parent == src
    assert Path(landed.probes.local.__file__).resolve().parent == src / "probes"


async def test_the_file_reader_stops_at_its_read_limit(tmp_path: Path) -> None:
    # 8 MiB on disk, a 1 MiB read limit: the reader must stop within one chunk past the limit,
    # not read the whole file (which on a huge file would run until the timeout).
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(8 << 20))
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        obs = await observe(
            FileProbe(path=str(big)),
            NonEmpty(),
            registry=registry,
            observer="test-verifier",
            read_limit=1 << 20,
        )
    assert obs.evidence is not None
    assert (1 << 20) < obs.evidence.total_bytes <= (2 << 20)


async def test_a_crash_while_judging_is_a_probe_error_never_a_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No real expectation makes judge() raise, so a stand-in raises here (a mock, by necessity):
    # what is tested is that observe() turns a judging crash into probe-error, not a verdict.
    import landed.probes.observe as observe_module

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("bug in a judge")

    monkeypatch.setattr(observe_module, "judge", broken)
    obs = await see(CommandProbe(argv=["echo", "45"]), Count(value=45))
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "judging failed: RuntimeError: bug in a judge" in obs.message


async def test_a_pull_request_url_is_never_read_past_a_git_source() -> None:
    """A git source gives a probe no license to fetch any URL: only an http source may."""
    from helpers.http import LocalHTTP

    server = LocalHTTP().start()
    try:
        server.route("/creds", 200, b'{"SecretAccessKey": "abc"}')
        async with SourceRegistry({"repo": {"kind": "git", "path": "."}}) as registry:
            probe = GitProbe(source="repo", pull_request_url=server.url("/creds"))
            obs = await observe(
                probe, Contains(value="SecretAccessKey"), registry=registry, observer="v"
            )
        assert obs.outcome is Outcome.PROBE_ERROR, obs
        assert "name an http source" in (obs.message or "") and obs.evidence is None
        assert not server.requests, "the verifier fetched the URL"
    finally:
        server.stop()


async def test_terminal_escapes_in_a_failing_commands_output_are_shown_escaped() -> None:
    probe = CommandProbe(
        argv=["printf '\\033]0;owned\\007\\033[2JALL GOOD' >&2; exit 3"], shell=True
    )
    obs = await see(probe, Contains(value="x"))
    assert obs.outcome is Outcome.PROBE_ERROR, obs
    assert "\x1b" not in (obs.message or "") and "\x07" not in (obs.message or "")
    assert "\\x1b[2JALL GOOD" in (obs.message or ""), obs.message
