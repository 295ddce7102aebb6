"""Landlock (Linux 5.13 and later) through its three system calls, with ctypes: a process
drops its own right to reach files outside an allow-list, for good (it cannot undo it, and
neither can anything it starts). No dependency beyond the C library."""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["READ", "WRITE", "LandlockError", "Rule", "abi", "restrict_self"]

# The system call numbers are the same on every architecture (generic table, 444-446).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Access rights (include/uapi/linux/landlock.h), by the ABI that brought them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_ALL = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
# Rights that mean something on a file (not a directory): the kernel refuses the others there.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
# ABI 6: a confined process may not signal, nor reach the abstract UNIX sockets of, a process
# outside its domain (the other roles, the `landed dev` parent).
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (1 << 16) - 1  # everything, each masked to what the running kernel knows


class LandlockError(OSError):
    """Landlock refused a step (or is absent): nothing was restricted."""


@dataclass(frozen=True)
class Rule:
    path: str
    access: int


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi() -> int:
    """The Landlock ABI the kernel offers; 0 when there is none (not Linux, older kernel, or
    Landlock left out of the boot's LSM list)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _handled(version: int) -> int:
    rights = _ABI1_ALL
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock {what}: {os.strerror(err)}")
    return result


def restrict_self(rules: Sequence[Rule], version: int) -> None:
    """Allow ``rules`` and nothing else to this process and what it starts, from now on.

    Landlock restricts the calling thread only: call before any other thread exists."""
    libc = _libc()
    handled = _handled(version)
    attr = _RulesetAttr(handled, 0, _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if version >= 6 else 0)
    ruleset = _check(
        libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0), "ruleset"
    )
    try:
        for rule in rules:
            _add(libc, ruleset, rule, handled)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(libc.syscall(_RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)


def _add(libc: ctypes.CDLL, ruleset: int, rule: Rule, handled: int) -> None:
    try:
        fd = os.open(rule.path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since the policy was made: nothing there to allow
    try:
        access = rule.access & handled
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_RIGHTS
        beneath = _PathBeneath(access, fd)
        _check(
            libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0),
            f"rule for {rule.path}",
        )
    finally:
        os.close(fd)
