"""Keep credentials out of evidence, messages and logs; make hostile bytes safe to show."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = ["REDACTED", "Redactor", "escape_for_humans", "redact_secret_shapes"]

REDACTED = "[redacted]"

# Shortest configured value treated as a secret: shorter ones ("1", "on") would redact
# ordinary output everywhere and protect nothing.
_MIN_SECRET = 4
# The shortest start of a secret redacted where a message cut the secret short, and the
# longest looked for: a message shows at most 80 characters of a value, and the pattern nests
# one group per character (a 1,000-character PEM would exceed the regex compiler's recursion).
_MIN_CUT = 8
_MAX_CUT = 128

# Authorization-style header lines and bearer tokens, wherever they appear in text.
_HEADER_LINE = re.compile(
    r"(?im)^(\s*(?:proxy-)?(?:authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie)"
    r"\s*[:=]\s*).+$"
)
_JSON_HEADER = re.compile(
    r"""(?i)(["'](?:proxy-)?(?:authorization|x-api-key|api-key|x-auth-token|cookie)["']\s*:\s*)"""
    r"""(["'])(?:(?!\2).)*\2"""
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}")
# user:password@ in a URL or DSN. Every repeat is bounded and the scheme may not start inside
# a word: unbounded, text such as "a.a.a.a..." made each start rescan the rest (quadratic time,
# seconds per 16 KB) while the verifier's event loop waited.
_URL_PASSWORD = re.compile(
    r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,31}://[^\s:/@]{0,256}:)[^\s@/]{1,16384}@"
)
# password=... in a libpq key/value DSN or a query string.
_KV_PASSWORD = re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api_key)=([^\s&;]+)")

# A PEM private key block (PKCS#1, PKCS#8, EC, OpenSSH, encrypted, PGP), whole; a block cut
# before its END line (a message that quotes only its start) up to where its base64 stops.
_PEM_PRIVATE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:(?!-----BEGIN )[\s\S]){0,16384}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
    # Cut short: its header lines and base64 lines, each whole or ending where a message cut it
    # ("..."); ordinary text after it is left alone.
    r"|(?:\r?\n(?:[ \t]*[A-Za-z0-9+/=]{4,16384}[ \t]*(?=\r?\n|$|\.\.\.)"
    r"|(?:Proc-Type|DEK-Info|Comment|Version):[^\n]{0,1024}|[ \t]*(?=\r?\n))){0,512})"
)
# Token shapes issued by well-known providers: their prefixes are documented and fixed, so a
# match is a credential whatever label (if any) stands before it.
_TOKEN_SHAPES = re.compile(
    r"\b(?:"
    r"(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"  # GitHub
    r"|xox[abposr]-[A-Za-z0-9-]{10,255}"  # Slack
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,255}"  # Stripe
    r"|sk-[A-Za-z0-9_-]{20,255}"  # OpenAI, Anthropic (sk-ant-...), sk-proj-...
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,1024}"  # a JWT
    r")"
)

# Cheap first look: text without any of these has nothing credential-shaped to redact.
_HINTS = re.compile(
    r"(?i)auth|api.?key|cookie|bearer|basic|://|pass|pwd|secret|token|private key|akia|asia"
    r"|gh[pousr]_|github_pat_|xox|k_live_|k_test_|sk-|aiza|eyj"
)
# The same look for ASCII text, lowercased first: several times faster than (?i), and for ASCII
# text exactly equivalent (case-insensitive matching of ASCII letters is lowercasing).
_HINTS_LOWER = re.compile(
    r"auth|api.?key|cookie|bearer|basic|://|pass|pwd|secret|token|private key|akia|asia"
    r"|gh[pousr]_|github_pat_|xox|k_live_|k_test_|sk-|aiza|eyj"
)

# C0 controls (except tab and newline), DEL and C1 controls: ESC starts ANSI sequences that can
# rewrite a terminal, so evidence shown to a person carries them escaped, never raw.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Redactor:
    """Replaces configured secret values and credential-shaped text with ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._originals = tuple(dict.fromkeys(s for s in secrets if len(s) >= _MIN_SECRET))
        forms: set[str] = set()
        for secret in self._originals:
            quoted = json.dumps(secret)[1:-1]
            forms.update(
                form
                for form in (
                    secret,
                    unquote(secret),  # a URL's password is registered as written (p%40ss)
                    quoted,
                    quoted.replace("/", "\\/"),  # JSON that escapes slashes
                )
                if len(form) >= _MIN_SECRET
            )
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = tuple(sorted(forms, key=len, reverse=True))
        self._pattern = (
            re.compile("|".join(_url_encoded(s) for s in self._secrets)) if self._secrets else None
        )
        # A match is at most every byte percent-encoded.
        self._longest = max((3 * len(s.encode()) for s in self._secrets), default=0)
        # A message that quotes a value cuts it short ("..." after 80 characters): the start of
        # a secret cut there no longer matches the secret whole.
        long = [s for s in self._secrets if len(s) > _MIN_CUT]
        # "start..." where a message cut the value's end, "...end" where it cut the middle
        # (pydantic shows a long input as its start...end).
        starts = "|".join(_prefix_of(s[:_MAX_CUT]) for s in long)
        ends = "|".join(_suffix_of(s[-_MAX_CUT:]) for s in long)
        self._cut_start = re.compile(f"(?:{starts})\\.\\.\\.") if long else None
        self._cut_end = re.compile(f"\\.\\.\\.(?:{ends})") if long else None

    @property
    def longest(self) -> int:
        """Length of the longest text a secret can appear as (how far a cut may reach into
        one)."""
        return self._longest

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        return Redactor([*self._originals, *secrets])

    def __call__(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        if self._cut_start is not None and self._cut_end is not None and "..." in text:
            text = self._cut_start.sub(REDACTED + "...", text)
            text = self._cut_end.sub("..." + REDACTED, text)
        if text.isascii():
            if not _HINTS_LOWER.search(text.lower()):
                return text
        elif not _HINTS.search(text):
            return text
        text = _PEM_PRIVATE.sub(REDACTED, text)
        text = _TOKEN_SHAPES.sub(REDACTED, text)
        text = _HEADER_LINE.sub(lambda m: m.group(1) + REDACTED, text)
        text = _JSON_HEADER.sub(lambda m: m.group(1) + m.group(2) + REDACTED + m.group(2), text)
        text = _BEARER.sub(lambda m: m.group(1) + " " + REDACTED, text)
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + "@", text)
        return _KV_PASSWORD.sub(lambda m: m.group(1) + "=" + REDACTED, text)


_SHAPES_ONLY = Redactor()


def redact_secret_shapes(text: str) -> str:
    """``text`` with credential-shaped parts redacted: PEM private keys, provider tokens,
    authorization headers, passwords in URLs and key=value pairs. For text from an agent (its
    report, its act's error), where no configured secret list applies."""
    return _SHAPES_ONLY(text)


def _url_encoded(secret: str) -> str:
    """A pattern for ``secret`` as written or as any URL encoder writes it: each character
    as itself or percent-encoded (upper or lower case hex; which characters an encoder escapes
    differs from one to the next), a space also as "+"."""
    parts = []
    for char in secret:
        escaped = "".join(f"%{b:02X}" for b in char.encode())
        forms = [re.escape(char), f"(?i:{re.escape(escaped)})"]
        if char == " ":
            forms.append(r"\+")
        parts.append(f"(?:{'|'.join(forms)})")
    return "".join(parts)


def _prefix_of(secret: str) -> str:
    """A pattern for any start of ``secret`` at least _MIN_CUT characters long (nested optional
    groups: linear in its length, no backtracking between alternatives)."""
    head, rest = secret[:_MIN_CUT], secret[_MIN_CUT:]
    tail = ""
    for char in reversed(rest):
        tail = f"(?:{re.escape(char)}{tail})?"
    return re.escape(head) + tail


def _suffix_of(secret: str) -> str:
    """A pattern for any end of ``secret`` at least _MIN_CUT characters long."""
    head, tail = secret[:-_MIN_CUT], secret[-_MIN_CUT:]
    lead = ""
    for char in head:
        lead = f"(?:{lead}{re.escape(char)})?"
    return lead + re.escape(tail)


def escape_for_humans(text: str) -> str:
    """Show control characters (ANSI escapes included) as ``\\xNN`` instead of sending them."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
