"""How landed reads a file path a user wrote in a URL or setting: ``~/`` is the home directory."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["expand_home", "user_path"]


def user_path(text: str) -> Path:
    """``text`` as a path, with a leading ``~`` or ``~/`` meaning the home directory.

    A quoted "~/x.db" in a flag or a value in a settings file reaches landed unexpanded, and
    would otherwise name a folder called ~ in the working directory. Only ~ and ~/ on the text
    itself (before pathlib drops a ./): ./~/x.db stays that folder, and ~name is a file name,
    not another user's home.
    """
    return Path(expand_home(text))


def expand_home(text: str) -> str:
    """``text`` with a leading ``~`` or ``~/`` made the home directory, else unchanged (kept as
    text: pathlib would turn ./~/x into ~/x)."""
    if text == "~" or text.startswith("~/"):
        return os.path.expanduser(text)
    return text
