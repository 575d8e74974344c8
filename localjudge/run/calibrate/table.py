"""What ``localjudge calibrate`` prints: the held-out checks of
:func:`~localjudge.run.calibrate.calibration.calibrate` as Markdown tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from localjudge.console import number
from localjudge.run.calibrate.calibration import Calibration

__all__ = ["IN_SAMPLE", "calibration_table"]


#: what calibrate's output and the README say of figures measured on the calibration file
IN_SAMPLE = (
    "agreement measured later on this same file is in-sample (the stored cut-offs were fitted "
    "on all of it): measure a judge on labels no fit saw"
)


def calibration_table(calibration: Calibration, *, force: bool = False) -> str:
    """The held-out check as Markdown: per kind and fold, the neutral cut-offs (the larger
    probability) and the cut-offs fitted on the other half, with 95% bootstrap intervals; then
    the storing rule per kind (cross-fitted against what is in use now, the paired difference)
    and what is stored."""
    lines = [
        "| decision | fold | cut-offs (fitted on the other half) | figure | neutral | fitted |",
        "|---|---|---|---|---|---|",
    ]
    for name, check in calibration.checks.items():
        for n, fold in enumerate(check["folds"], 1):
            cuts = _cuts(list(fold["cutoffs"]))
            for figure, value in fold["fitted"].items():
                if not isinstance(value, dict):
                    continue
                before = _figure(fold["argmax"][figure])
                lines.append(f"| {name} | {n} | {cuts} | {figure} | {before} | {_figure(value)} |")
        for figure, after in check["mean"]["fitted"].items():
            before = check["mean"]["argmax"].get(figure)
            lines.append(f"| {name} | mean | | {figure} | {number(before)} | {number(after)} |")
    lines += [
        "",
        "Storing rule: every group judged by cut-offs fitted on the other half, against the "
        "cut-offs in use now on the same groups; stored only when the difference's lower 95% "
        "bound is above 0.",
        "",
        "| decision | figure | groups | in use now | fitted, held out | difference | stored |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rule in calibration.rules.items():
        now = "neutral" if rule.current_cutoffs is None else "current"
        verdict = "yes" if rule.store else ("yes (--store-anyway)" if force else "no: kept")
        lines.append(
            f"| {name} | {rule.objective} | {rule.groups} | "
            f"{_ci(rule.current, rule.current_ci95)} ({now}) | "
            f"{_ci(rule.fitted, rule.fitted_ci95)} | "
            f"{_ci(rule.difference, rule.difference_ci95, sign=True)} | {verdict} |"
        )
    if calibration.combined:
        lines += [
            "",
            "Combinations: the readings of a decision combined by a model fitted on the other "
            "half (its cut-offs with it), against what is in use now; stored, in place of the "
            "cut-offs above, only when the difference's lower 95% bound is above 0.",
            "",
            "| decision | readings | figure | in use now | combined, held out | difference "
            "| stored |",
            "|---|---|---|---|---|---|---|",
        ]
    for name, found in calibration.combined.items():
        rule = found.rule
        lines.append(
            f"| {name} | {' + '.join(found.readings)} | {rule.objective} | "
            f"{_ci(rule.current, rule.current_ci95)} | {_ci(rule.fitted, rule.fitted_ci95)} | "
            f"{_ci(rule.difference, rule.difference_ci95, sign=True)} | "
            f"{'yes' if rule.store else 'no'} |"
        )
    lines.append("")
    if calibration.grouped:
        lines.append(calibration.grouped)
    stored = calibration.cutoffs.as_json()
    lines.append(
        "cut-offs fitted on the whole file: "
        + (", ".join(f"{k} = {_cuts(v)}" for k, v in stored.items()) or "none")
    )
    lines += [f"not fitted: {k}: {why}" for k, why in calibration.skipped.items()]
    lines += [
        f"left out: {k}: {n} item{'s' if n != 1 else ''} labelled with a share between 0 and 1 "
        "(only 0 and 1 are fitted on)"
        for k, n in calibration.left_out.items()
    ]
    return "\n".join(lines)


def _cuts(value: Any) -> str:
    return ", ".join(number(v) for v in value) if isinstance(value, list) else number(value)


def _ci(value: float | None, ci: Sequence[float] | None, *, sign: bool = False) -> str:
    if value is None:
        return "-"
    tail = f" [{number(ci[0], sign=sign)}, {number(ci[1], sign=sign)}]" if ci else ""
    return number(value, sign=sign) + tail


def _figure(figure: Mapping[str, Any]) -> str:
    ci = figure.get("ci95")
    tail = f" [{number(ci[0])}, {number(ci[1])}]" if ci else ""
    return number(figure.get("value")) + tail
