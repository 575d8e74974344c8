"""JUnit XML of an eval run, for CI systems that show test reports (``eval --junit PATH``).

One ``<testsuite>`` per metric (``localjudge.<metric>``), one ``<testcase>`` per item x metric
(name: the item's id; classname: ``localjudge.<metric>``). A case fails when its score is below
the metric's ``--fail-under`` threshold (the reasons in the body), errors when the item failed
(the error's message), and is skipped when the metric gave it no score. A run that stopped early
(Ctrl-C, a fatal error) adds a ``localjudge.run`` suite whose one case errors with why, so a
partial report never reads as green.

:func:`junit_xml` is a pure function of result rows (the results format, so an old run's
``results.jsonl`` converts too); :func:`write_junit` writes it whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from localjudge.console import number

__all__ = ["RUN_SUITE", "JUnitReport", "junit_xml", "write_junit"]

#: the suite that says a run stopped before its end
RUN_SUITE = "localjudge.run"
#: characters XML 1.0 cannot hold, even escaped (control characters, lone surrogates)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    """``value`` as XML-safe text: strings as they are, the rest as compact JSON."""
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return _NOT_XML.sub("\ufffd", value)


def _reasons(row: Mapping[str, Any]) -> str:
    """The judge's reasons for a row: its reason, then each verdict (its decisions, then its own
    reason when the judge wrote one)."""
    lines = [str(row["reason"])] if row.get("reason") else []
    for verdict in row.get("verdicts") or []:
        if isinstance(verdict, Mapping):
            decided = {k: v for k, v in verdict.items() if k not in ("reason", "probs")}
            why = f": {verdict['reason']}" if verdict.get("reason") else ""
            lines.append(f"- {_text(decided)}{why}")
    return "\n".join(lines)


def _case(row: Mapping[str, Any], threshold: float | None) -> tuple[ET.Element, str | None]:
    """The testcase of one row and its outcome (``failure``, ``error``, ``skipped`` or None)."""
    metric = str(row["metric"])
    case = ET.Element(
        "testcase",
        name=_text(str(row["id"])),
        classname=f"localjudge.{_text(metric)}",
        time=number(float(row.get("seconds") or 0.0)),
    )
    error, score = row.get("error"), row.get("score")
    if error is not None:
        child = ET.SubElement(
            case, "error", message=_text(error.get("message", "")), type=_text(error.get("kind"))
        )
        child.text = _text(error.get("hint") or "")
        return case, "error"
    if score is None:
        ET.SubElement(case, "skipped", message="the metric gave this item no score")
        return case, "skipped"
    if threshold is not None and float(score) < threshold:
        child = ET.SubElement(
            case,
            "failure",
            message=f"score {float(score)!r} < {threshold!r} (--fail-under {metric}={threshold})",
            type="below_threshold",
        )
        child.text = _text(_reasons(row))
        return case, "failure"
    return case, None


def _properties(parent: ET.Element, properties: Mapping[str, Any]) -> None:
    if not properties:
        return
    holder = ET.SubElement(parent, "properties")
    for name, value in properties.items():
        ET.SubElement(holder, "property", name=_text(name), value=_text(value))


def _suite(
    name: str, cases: Sequence[tuple[ET.Element, str | None]], properties: Mapping[str, Any]
) -> ET.Element:
    outcomes = [outcome for _, outcome in cases]
    total = sum(float(case.get("time", "0")) for case, _ in cases)
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(cases)),
        failures=str(outcomes.count("failure")),
        errors=str(outcomes.count("error")),
        skipped=str(outcomes.count("skipped")),
        time=number(total),
    )
    _properties(suite, properties)
    suite.extend(case for case, _ in cases)
    return suite


def junit_xml(
    rows: Iterable[Mapping[str, Any]],
    *,
    metrics: Sequence[str] = (),
    fail_under: Mapping[str, float] | None = None,
    properties: Mapping[str, Any] | None = None,
    stopped: str | None = None,
) -> ET.Element:
    """The ``<testsuites>`` element for result ``rows`` (results-format mappings).

    ``metrics`` orders the suites (each gets one even with no rows; metrics only the rows name
    follow); ``fail_under`` holds the per-metric thresholds an item's score is held to;
    ``properties`` (run settings, the judge's model and sha256) go on every suite, with the
    metric's threshold added; ``stopped`` says why the run ended early, as an error case in a
    :data:`RUN_SUITE` suite.
    """
    thresholds = dict(fail_under or {})
    shared = dict(properties or {})
    by_metric: dict[str, list[tuple[ET.Element, str | None]]] = {m: [] for m in metrics}
    for row in rows:
        metric = str(row["metric"])
        by_metric.setdefault(metric, []).append(_case(row, thresholds.get(metric)))
    root = ET.Element("testsuites", name="localjudge")
    for metric, cases in by_metric.items():
        own = {**shared, **({"fail_under": thresholds[metric]} if metric in thresholds else {})}
        root.append(_suite(f"localjudge.{_text(metric)}", cases, own))
    if stopped is not None:
        case = ET.Element("testcase", name="run", classname=RUN_SUITE, time=number(0.0))
        ET.SubElement(case, "error", message=_text(stopped), type="stopped")
        root.append(_suite(RUN_SUITE, [(case, "error")], shared))
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root)))
    root.set("time", number(sum(float(s.get("time", "0")) for s in root)))
    return root


def write_junit(path: Path, root: ET.Element) -> Path:
    """Write ``root`` to ``path`` through a temporary file in the same directory and a rename:
    a reader sees the previous file or the whole new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.indent(root)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            ET.ElementTree(root).write(f, encoding="utf-8", xml_declaration=True)
            f.write(b"\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


@dataclass
class JUnitReport:
    """The JUnit file of a run in progress: it keeps what each case needs as results come in
    (:meth:`add`), and is written at the end or when the run stops early (:meth:`write`)."""

    path: Path
    metrics: Sequence[str]
    fail_under: Mapping[str, float] = field(default_factory=dict)
    properties: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, row: Mapping[str, Any]) -> None:
        """Keep one result row, without what its case cannot show (verdicts, tokens): the
        judge's reasons are kept only for a row that will be a failure."""
        kept = {k: row.get(k) for k in ("index", "id", "metric", "score", "seconds", "error")}
        threshold = self.fail_under.get(str(row["metric"]))
        score = row.get("score")
        below = threshold is not None and score is not None and float(score) < threshold
        kept["reason"] = _reasons(row) if below else None
        self.rows.append(kept)

    def write(self, *, stopped: str | None = None, **properties: Any) -> Path:
        """Write the cases so far in input order (``stopped``: why the run ended early), with
        ``properties`` added to the run's."""
        root = junit_xml(
            sorted(self.rows, key=lambda row: int(row["index"])),
            metrics=self.metrics,
            fail_under=self.fail_under,
            properties={**self.properties, **properties},
            stopped=stopped,
        )
        return write_junit(self.path, root)
