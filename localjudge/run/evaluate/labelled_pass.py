"""The labelled pass of an eval run with ``--labels``: the labelled items scored like the data
(``labelled.jsonl``), each judge score paired with the human one, and what those pairs give the
summary (prediction-powered means, :mod:`localjudge.stats.ppi`) and the rows (an isotonic map to
the human scale); and the warning when those labels are the ones the cut-offs were fitted on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localjudge.decisions import Cutoffs, kinds_of
from localjudge.errors import DataError
from localjudge.metrics import METRICS
from localjudge.run.evaluate.evaluation import judged
from localjudge.run.evaluate.plan import Plan
from localjudge.run.labels import canonical, item_where, label_problem, n_pieces, refuse_labels
from localjudge.run.options import ScoringOptions
from localjudge.run.results import LABELLED, ResultRow, ResultsWriter
from localjudge.stats.ppi import fit_isotonic, ppi_mean

__all__ = ["LabelledScores", "calibrations", "corrected", "in_sample", "score_labelled"]


@dataclass
class LabelledScores:
    """One metric on the labelled items: the human-derived score and the judge's, item by item
    (only items that have both; ``soft`` None where a judge gave no soft score)."""

    human: list[float] = field(default_factory=list)
    hard: list[float] = field(default_factory=list)
    soft: list[float | None] = field(default_factory=list)

    def soft_scores(self) -> list[float] | None:
        """The soft scores, when every labelled item has one (else None)."""
        if not self.soft or any(v is None for v in self.soft):
            return None
        return [float(v) for v in self.soft if v is not None]

    def calibration(self) -> Callable[[ResultRow], float | None] | None:
        """A row's score mapped to the human scale by an isotonic fit on these items: from the
        soft scores when every labelled item has one, else from the hard ones (a row is mapped
        from the same kind of score; None when it has none). None when nothing can be fitted."""
        soft = self.soft_scores()
        key = "soft_score" if soft is not None else "score"
        fitted = fit_isotonic(soft if soft is not None else self.hard, self.human)
        if fitted is None:
            return None

        def calibrated(row: ResultRow) -> float | None:
            value = row[key]  # type: ignore[literal-required]
            return None if value is None else fitted(float(value))

        return calibrated


def score_labelled(run: Plan) -> dict[str, LabelledScores]:
    """Score the records of the run's labelled file (bench's format: records with ``labels``)
    like the data, write their rows to ``labelled.jsonl`` in its output directory, and pair
    each judge score with the metric's formula applied to the human labels. Items without labels
    for a metric are left out of it; a label refused (:mod:`localjudge.run.labels`) raises
    :class:`~localjudge.errors.DataError` before anything is judged."""
    assert run.files.labels is not None
    labels, records, metrics = run.files.labels.path, run.labelled, run.metrics
    options = run.options
    field = options.mapping.get("retrieved_contexts", "retrieved_contexts")
    checked = {rec.index: rec.data for rec in records if rec.data and "labels" in rec.data}
    refuse_labels(
        (
            f"{item_where(data, rec.index, rec.line)}: {problem}"
            for rec in records
            if (data := checked.get(rec.index)) is not None
            and (problem := label_problem(data["labels"], n_pieces(data, field)))
        ),
        labels,
        error=DataError,
    )
    human: dict[tuple[int, str], float] = {}
    for index, data in checked.items():
        read_labels = canonical(data["labels"])
        for m in metrics:
            value = METRICS[m.name].human_score(read_labels)
            if value is not None:
                human[(index, m.name)] = float(value)
    scores = {m.name: LabelledScores() for m in metrics}
    # every labelled item (``only`` picks among the data's), scored as the data is
    scoring = ScoringOptions(
        mapping=options.mapping, truncate=options.truncate, chunk_size=options.chunk_size
    )
    with ResultsWriter(
        run.files.out_dir / LABELLED.name,
        run.judge.identity,
        run.settings_by_metric,
        raw_output=options.raw_output,
    ) as writer:
        for res in judged(records, metrics, run.judge, cutoffs=run.cutoffs, options=scoring):
            row = writer.write(res)
            h = human.get((res.index, res.metric))
            if h is not None and row["score"] is not None:
                scores[res.metric].human.append(h)
                scores[res.metric].hard.append(float(row["score"]))
                scores[res.metric].soft.append(row["soft_score"])
    return scores


def corrected(labelled: LabelledScores, hard: list[float], soft: list[float]) -> dict[str, Any]:
    """The prediction-powered estimates of one metric's human-scale mean (hard, soft); the soft
    one only when every labelled and every scored item has a soft score."""
    out: dict[str, Any] = {}
    est = ppi_mean(labelled.human, labelled.hard, hard)
    out["ppi"] = est.as_dict() if est is not None else None
    soft_l = labelled.soft_scores()
    est = ppi_mean(labelled.human, soft_l, soft) if soft_l and len(soft) == len(hard) else None
    out["ppi_soft"] = est.as_dict() if est is not None else None
    return out


def in_sample(
    labels: Path, labels_sha256: str, cutoffs: Cutoffs, metrics: Sequence[str]
) -> list[str]:
    """A warning when ``labels`` (whose sha256 is ``labels_sha256``) is the file the metrics'
    cut-offs were fitted on (it is in their provenance): agreement and corrections measured on
    it are in-sample."""
    mine = cutoffs.only(kinds_of(metrics))
    kinds = [k for k in sorted(mine.values) if mine.source(k).sha256 == labels_sha256]
    if not kinds:
        return []
    return [
        f"{labels.name} is the file the judge's cut-offs of {', '.join(kinds)} were fitted on: "
        "agreement and corrections measured on it are in-sample (optimistic); use labels no "
        "fit saw"
    ]


def calibrations(
    labelled: Mapping[str, LabelledScores],
) -> dict[str, Callable[[ResultRow], float | None]]:
    """Each metric's isotonic map of a row's score to the human scale, where one can be fitted."""
    out = {}
    for name, pairs in labelled.items():
        if (calibrated := pairs.calibration()) is not None:
            out[name] = calibrated
    return out
