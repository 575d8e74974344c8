"""Console tables drawn with ``rich``: boxed and coloured on a terminal, plain text elsewhere.

A table is data (:class:`TextTable`: columns and rows of strings); :func:`render` turns tables
into the text a command prints. Off a terminal (a pipe, a file, a CI log) the text is plain
ASCII: a header, a line of dashes and one line per row, with no escape codes and no width
limit (no wrapping), so it greps and diffs well. On a terminal rich draws it with the
terminal's width, and colour unless ``NO_COLOR`` is set (https://no-color.org). ``rich`` is
imported only when a table is drawn.
"""

from __future__ import annotations

import io
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BAR_FORMAT", "Column", "TextTable", "is_number", "no_color", "number", "render"]

#: tqdm's default layout with the count as a whole number (a bar advances by 1/metrics per
#: finished metric, so its count is fractional mid-item)
BAR_FORMAT = "{l_bar}{bar}| {n:.0f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"

#: the width off a terminal: wide enough that no table wraps
_PLAIN_WIDTH = 10_000


@dataclass(frozen=True)
class Column:
    """A column's header and alignment (numbers to the right)."""

    header: str
    numeric: bool = False


@dataclass(frozen=True)
class TextTable:
    """Rows of cell strings under ``columns``; ``styles`` (same shape, or empty) names a rich
    style per cell ("" for none) that colours it on a terminal."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[str]]
    title: str | None = None
    styles: Sequence[Sequence[str]] = field(default_factory=list)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a finite real number (a boolean is not one)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def number(value: Any, digits: int = 3, *, sign: bool = False, missing: str = "-") -> str:
    """A figure as text, the package's one number formatter (console tables, calibrate's
    Markdown, the HTML reports, JUnit): ``digits`` decimals, a ``+`` before a positive one with
    ``sign``, and ``missing`` for None or anything that is not a finite number."""
    if not is_number(value):
        return missing
    return f"{float(value):{'+' if sign else ''}.{digits}f}"


def no_color() -> bool:
    """Whether the user asked for no colour (``NO_COLOR`` set and not empty)."""
    return bool(os.environ.get("NO_COLOR"))


def render(tables: Sequence[TextTable], *, terminal: bool = False) -> str:
    """The tables as text, separated by a blank line (see the module docstring)."""
    from rich import box  # noqa: PLC0415 (keep `import localjudge` light)
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=terminal,
        no_color=no_color() or not terminal,
        color_system="auto" if terminal else None,
        width=shutil.get_terminal_size((100, 24)).columns if terminal else _PLAIN_WIDTH,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    for n, spec in enumerate(tables):
        if n:
            console.print()
        if spec.title:  # above the table, not in it: rich would wrap it to the table's width
            console.print(_cell(spec.title, "bold" if terminal else ""))
        table = Table(
            box=box.SIMPLE_HEAD if terminal else _ascii_head(),
            show_edge=False,
            pad_edge=False,
            header_style="bold" if terminal else "",
            safe_box=not terminal,
        )
        for col in spec.columns:
            table.add_column(col.header, justify="right" if col.numeric else "left")
        for i, row in enumerate(spec.rows):
            styles = spec.styles[i] if i < len(spec.styles) else []
            table.add_row(
                *(
                    _cell(cell, styles[j] if j < len(styles) and terminal else "")
                    for j, cell in enumerate(row)
                )
            )
        console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def _cell(text: str, style: str) -> Any:
    from rich.text import Text  # noqa: PLC0415

    return Text(text, style=style)


def _ascii_head() -> Any:
    from rich.box import Box  # noqa: PLC0415

    # a header, a line of dashes under it, rows: nothing else drawn
    return Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
