"""`landed board`'s table, printed as its rows are read: memory does not grow with the board.

rich sizes a table's columns from every row before it prints one, and draws each row through
its layout engine (milliseconds a row); a board of a million tasks would be held whole and take
an hour. Here the columns are sized by rich from the first page of rows (FIRST_PAGE), exactly as
rich would size a table of those rows alone, and every row is then printed as it comes: a row
whose cells fit their columns is written as rich would draw it, and one that does not (a longer
task id on a later page) is drawn by rich in the same columns, its cells folded. A board of at
most one page prints as rich's table of it; a longer one keeps the widths of its first page.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from rich.box import Box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from landed.cli.check_render import _safe

__all__ = ["FIRST_PAGE", "BoardTable"]

#: Rows the columns are sized from (the ledgers' page of board rows).
FIRST_PAGE = 500

_COLUMNS = (
    "task",
    "attempt",
    "owner",
    "claimed",
    "done",
    "verdict",
    "rung",
    "settled at",
    "signed",
    "chain",
)
#: The widest word a column can show past the first page, whatever the first page held.
_WORDS = {"done": "NOT DONE", "chain": "UNTRUSTED"}


def _done(row: dict[str, Any]) -> bool:
    """DONE only for a trusted row whose receipt is done (``Receipt.done``: settled, with a
    verdict that proves the outcome); a row the chain does not prove is never DONE."""
    return bool(row["done"]) and row["chain"] != "untrusted"


def _plain(text: str) -> str:
    """User text with no control characters (check_render._safe; a printable text is kept as
    it is: every character _safe escapes is a non-printable one)."""
    return text if text.isprintable() else _safe(text)


def _cells(row: dict[str, Any], done: bool) -> list[str]:
    """Each cell's plain text."""
    return [
        _plain(row["task_id"]),
        str(row["attempt"]),
        _plain(row["owner"] or "-"),
        _plain(row["claimed_status"]),
        "DONE" if done else "NOT DONE",
        _plain(row["verdict"] or "-"),
        _plain(row["rung"] or "-"),
        row["settled_at"] or "-",
        str(row["signed_proofs"]),
        "UNTRUSTED" if row["chain"] == "untrusted" else "ok",
    ]


def _styled(cells: list[str]) -> list[Text]:
    """The cells as rich draws them: the verdict words and UNTRUSTED in colour."""
    styles = {"DONE": "green", "NOT DONE": "yellow"}
    out = [Text(text) for text in cells]
    out[4].stylize(styles[cells[4]])
    if cells[9] == "UNTRUSTED":
        out[9].stylize("bold red")
    return out


def _width(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


class BoardTable:
    """The board's table and its summary, fed row by row (``add``), ended by ``finish``."""

    def __init__(self, title: str, console: Console) -> None:
        self._title = title
        self._console = console
        # A console with no colours (a pipe, a file) is written to as text: the fast way.
        self._plain = console.color_system is None
        self._first: list[list[str]] | None = []
        self._widths: list[int] = []
        self._inner: list[int] = []
        self._between = ""
        self._box: Box | None = None
        # Lines waiting to be printed: text on a plain console, else rich Text (with styles).
        self._out: list[str | Text] = []
        self.count = self.done = self.reversed = self.untrusted = 0

    def add(self, row: dict[str, Any]) -> None:
        done = _done(row)
        self.count += 1
        self.done += done
        self.reversed += row["verdict"] == "reversed"
        self.untrusted += row["chain"] == "untrusted"
        cells = _cells(row, done)
        if self._first is not None:
            self._first.append(cells)
            if len(self._first) >= FIRST_PAGE:
                self._lay_out(more=True)
            return
        self._row(cells)
        if len(self._out) >= FIRST_PAGE:
            self._flush()

    def add_all(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.add(row)

    def finish(self) -> None:
        """The rest of the rows, the table's foot and the summary line."""
        if self._first is not None:
            self._lay_out(more=False)
        assert self._box is not None
        self._out.append(self._box.get_bottom(self._widths))
        self._flush()
        console = self._console
        console.print(
            f"{self.count} task(s): {self.done} DONE, {self.count - self.done} NOT DONE; "
            f"{self.reversed} reversed",
            highlight=False,
        )
        if self.untrusted:
            console.print(
                f"[red]{self.untrusted} row(s) UNTRUSTED[/red]: past a break in the hash chain "
                "or foreign; run `landed ledger verify --trust RUNNER_HEAD_KEY.pub`",
                highlight=False,
            )

    def _table(self, widths: list[int] | None = None, *, head: bool = True) -> Table:
        title = Text(self._title) if head else None
        table = Table(title=title, title_justify="left", show_header=head)
        for i, column in enumerate(_COLUMNS):
            justify: Literal["left", "right"] = "right" if column == "attempt" else "left"
            # Fixed widths (less the cell's padding) for the rows after the first page.
            fixed = widths[i] - 2 if widths is not None else None
            table.add_column(column, overflow="fold", justify=justify, width=fixed)
        return table

    def _lay_out(self, *, more: bool) -> None:
        """Size the columns from the first page as rich does, then print the head and it."""
        first, self._first = self._first or [], None
        table = self._table()
        for cells in first:
            table.add_row(*_styled(cells))
        options = self._console.options
        inner = options.update_width(options.max_width - table._extra_width)
        widths = table._calculate_column_widths(self._console, inner)
        if more:
            # Later pages may show words the first did not hold (NOT DONE, UNTRUSTED).
            for i, column in enumerate(_COLUMNS):
                if column in _WORDS:
                    widths[i] = max(widths[i], len(_WORDS[column]) + 2)
        self._widths = widths
        self._inner = [width - 2 for width in widths]  # less each cell's padding
        safe = table.safe_box if table.safe_box is not None else self._console.safe_box
        self._box = table.box.substitute(options, safe=safe) if table.box else None
        if self._box is None:  # the default table always has one; never reached
            raise RuntimeError("the board's table has no box")
        self._between = f" {self._box.mid_vertical} "
        # The title and the head as rich draws them (a row of empty cells, then dropped).
        head = self._table(widths)
        head.add_row(*([""] * len(_COLUMNS)))
        self._out.extend(self._render(head)[:-2])
        for cells in first:
            self._row(cells)
        self._flush()

    def _row(self, cells: list[str]) -> None:
        assert self._box is not None
        box, inner = self._box, self._inner
        # The common row: plain ASCII (a character a cell of the terminal) that fits.
        ascii_row = self._plain and "".join(cells).isascii()
        if ascii_row and all(map(int.__le__, map(len, cells), inner)):
            parts = list(map(str.ljust, cells, inner))
            parts[1] = cells[1].rjust(inner[1])  # the attempt is justified right
            self._out.append(f"{box.mid_left} {self._between.join(parts)} {box.mid_right}")
            return
        pads = [room - _width(text) for text, room in zip(cells, inner, strict=True)]
        if min(pads) < 0:
            # Too long for its column: rich folds the cell over lines in the same widths.
            table = self._table(self._widths, head=False)
            table.add_row(*_styled(cells))
            self._out.extend(self._render(table)[1:-1])
            return
        line = Text(box.mid_left)
        for i, (text, pad) in enumerate(zip(_styled(cells), pads, strict=True)):
            line.append(" " + " " * pad if i == 1 else " ")
            line.append_text(text)
            line.append(" " if i == 1 else " " * pad + " ")
            line.append(box.mid_vertical if i < len(cells) - 1 else box.mid_right)
        self._out.append(line if not self._plain else line.plain)

    def _render(self, table: Table) -> list[str | Text]:
        with self._console.capture() as captured:
            self._console.print(table)
        lines = captured.get().split("\n")
        lines = lines[:-1] if lines and lines[-1] == "" else lines
        return list(lines) if self._plain else [Text.from_ansi(line) for line in lines]

    def _flush(self) -> None:
        if not self._out:
            return
        lines, self._out = self._out, []
        if self._plain:
            self._console.file.write("\n".join(map(str, lines)) + "\n")
        else:
            text = Text("\n").join(Text(x) if isinstance(x, str) else x for x in lines)
            self._console.print(text, highlight=False, crop=False, soft_wrap=True)
