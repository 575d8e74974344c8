"""Progress on stderr while a run judges: a bar on a terminal, nothing elsewhere, and the
crash reporter's record of finished items when the run has one. :func:`on_terminal` is looked up
on this module at each run, so a test can make it say yes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def on_terminal() -> bool:
    """Whether stderr, where progress is drawn, is a terminal."""
    return sys.stderr.isatty()


class progress_bar:  # noqa: N801 (used as a context manager, reads like a function)
    """A tqdm bar on stderr in items (items/s and ETA) when ``total`` is known (a terminal),
    and the crash reporter's record of finished items when there is one."""

    def __init__(self, total: int | None, n_metrics: int, reporter: Any = None) -> None:
        self.total = total
        self.n_metrics = max(n_metrics, 1)
        self.reporter = reporter
        self.bar: Any = None

    def __enter__(self) -> Callable[[Any], None] | None:
        if self.total is not None:
            from tqdm import tqdm  # noqa: PLC0415

            from localjudge.console import BAR_FORMAT  # noqa: PLC0415

            self.bar = tqdm(
                total=self.total,
                unit="item",
                file=sys.stderr,
                dynamic_ncols=True,
                bar_format=BAR_FORMAT,
            )
        if self.bar is None and self.reporter is None:
            return None
        step = 1.0 / self.n_metrics

        def on_result(res: Any) -> None:
            if self.bar is not None:
                self.bar.update(step)
            if self.reporter is not None:
                self.reporter.done(res.index, res.metric)

        return on_result

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
