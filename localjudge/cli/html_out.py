"""The HTML report of a run: what ``report`` writes, and what ``eval`` and ``bench`` write beside
their run when given ``--html`` (:func:`localjudge.run.report.render.write_report`, loaded only
then)."""

from __future__ import annotations

from pathlib import Path


def write_html(out_dir: Path, data: Path | None, output: Path | None = None) -> Path:
    """Write the report of the run in ``out_dir`` to ``output`` (default:
    ``out_dir/report.html``; a folder that exists: ``report.html`` in it) and return its path."""
    from localjudge.run.report.render import REPORT_FILE, write_report  # noqa: PLC0415

    if output is not None and output.is_dir():
        output = output / REPORT_FILE
    return write_report(out_dir, output, data=data)
