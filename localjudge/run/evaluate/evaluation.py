"""Running an evaluation: records x metrics -> results, in memory (:func:`evaluate`, :func:`score`;
file to file is :mod:`localjudge.run.evaluate.file_run`).

The runner owns the loop and every judge call. Items are processed in chunks; inside a chunk
each metric builds its asks for each item (pure: one call per decision), the judge answers them
together (:func:`~localjudge.judge.protocol.generate_many`: one batch for a batched engine,
calls that share an opening next to each other, so the engine evaluates it once), each answer's
hard value is read from its soft value and the judge's cut-offs
(:func:`~localjudge.decisions.decide`), then, with reasons on, one reason per decision is
asked after it (a reason never moves a decision), and the metric turns the answers into a
result. Items too long for the window are trimmed and asked again when ``truncate`` is on; a
reason call too long for it is dropped, never a reason to ask a decision again (the row's
``details.reasons_skipped`` counts them).
Results come out in input order (item, then metric order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from localjudge.data.item import Item, make_item
from localjudge.data.raw_records import Record
from localjudge.decisions import Cutoffs, decide_all, kinds_of
from localjudge.errors import ContextOverflowError, InvalidItemError, ItemError
from localjudge.judge.protocol import (
    CallOrigin,
    Generation,
    Judge,
    JudgeRequest,
)
from localjudge.metrics import METRICS, Metric, MetricResult
from localjudge.metrics.asks import Answers, Ask, reason_request, sum_stats
from localjudge.metrics.protocols import protocol_ref
from localjudge.run.evaluate.grouping import ask_grouped
from localjudge.run.evaluate.truncation import trim_contexts
from localjudge.run.options import CHUNK_SIZE, Hooks, OnJudging, ScoringOptions
from localjudge.run.outcome import Evaluation
from localjudge.run.results import ItemResult
from localjudge.run.settings import protocol_of, resolve_cutoffs

__all__ = [
    "CHUNK_SIZE",
    "REASON_SKIPPED",
    "OnJudging",
    "RecordLike",
    "evaluate",
    "judged",
    "metric_settings",
    "resolve_cutoffs",
    "resolve_metrics",
    "score",
    "trim_contexts",
]

#: why a verdict has no reason in ``details.reasons_skipped`` (its decision was made all the same)
REASON_SKIPPED = "the reason call did not fit the context window"

#: what evaluate() accepts per record: a mapping, a pydantic model, a prepared Item, or a dataset
#: Record (one that could not be read, a malformed JSONL line, becomes an error row)
RecordLike = Mapping[str, Any] | BaseModel | Item | Record


def resolve_metrics(metrics: Sequence[Metric | str | type[Metric]]) -> list[Metric]:
    """Metric instances as given; names (``"recall"``) and classes with default settings."""
    resolved: list[Metric] = []
    for m in metrics:
        if isinstance(m, Metric):
            resolved.append(m)
            continue
        cls = METRICS.get(m) if isinstance(m, str) else m
        if cls is None:
            raise ValueError(f"unknown metric {m!r}; expected one of {', '.join(METRICS)}")
        resolved.append(cls())
    names = [m.name for m in resolved]
    if len(set(names)) != len(names):
        raise ValueError(f"metrics repeated: {names}")
    return resolved


def evaluate(
    records: Iterable[RecordLike],
    metrics: Sequence[Metric | str | type[Metric]],
    judge: Judge,
    options: ScoringOptions | None = None,
    *,
    keep: bool = True,
    column_map: Mapping[str, str] | None = None,
    **keywords: Any,
) -> Evaluation:
    """Score every record with every metric; the :class:`~localjudge.run.outcome.Evaluation`
    yields results as chunks finish, in input order, and has ``summary()``, ``rows()``,
    ``to_jsonl()``, ``to_pandas()`` and ``assert_thresholds()``.

    ``options`` (a :class:`~localjudge.run.options.ScoringOptions`; an
    :class:`~localjudge.run.options.EvalOptions` is one, and only its scoring fields are read
    here), or the same names as keyword arguments (they replace the fields of ``options``):
    ``mapping``, ``truncate``, ``chunk_size``, ``only``, ``cutoffs``; and the hooks
    ``on_result`` and ``on_judging`` (:class:`~localjudge.run.options.Hooks`).

    Per-item problems (invalid fields, a prompt too long for the window) become results with
    ``error`` set; every other exception propagates and stops the run. With ``truncate`` an item
    too long for the window has its longest contexts trimmed until it fits
    (:func:`trim_contexts`). With reasons on, a reason call too long for the window is dropped
    and its verdict keeps no reason (the result's ``details["reasons_skipped"]`` says how many
    and why); the decisions are those the item gets with reasons off. ``on_result`` is called
    as each item x metric finishes (for progress display), before its chunk is yielded;
    ``on_judging`` with the (index, id, metric) of every item handed to the judge, before the
    judge starts on them (what a crash report names).

    ``only`` maps metric names to the input indices that metric scores (a metric it does not
    name scores none): the others get no row for it. ``bench`` judges a metric only on the
    items whose labels cover it.

    ``cutoffs``: the soft value at which each kind of decision turns to yes; by default the
    judge's own (:func:`~localjudge.decisions.judge_cutoffs`: the registry's, or the user's from
    ``localjudge calibrate``), and the neutral cut-offs where it has none (the larger
    probability: :func:`~localjudge.decisions.neutral`). They are recorded with each metric's
    settings, with a short reference to each one's source.

    ``keep=False`` makes it a pure stream whose memory does not grow with the data (what
    ``eval_file`` uses); the methods then see only results not yet iterated.

    ``records`` is any iterable of mappings, pydantic models or items: a list, a generator, a
    pandas DataFrame (its rows), a Hugging Face ``Dataset`` split. List cells may be numpy or
    pyarrow arrays. ``mapping`` (or ragas' spelling, ``column_map``) maps our field names to
    the data's: ``{"user_input": "question"}``.
    """
    resolved = resolve_metrics(metrics)
    if judge is None:
        raise ValueError("evaluate() needs a judge: load_judge() or a fake")
    if column_map is not None:
        if keywords.get("mapping") is not None:
            raise ValueError("give mapping= or column_map=, not both")
        keywords = {**keywords, "mapping": column_map}
    scoring, hooks = ScoringOptions.given(options, keywords)
    used = resolve_cutoffs(judge, scoring.cutoffs, protocol=protocol_of(resolved))
    stream = judged(
        _records_of(records), resolved, judge, cutoffs=used, options=scoring, hooks=hooks
    )
    return Evaluation(
        stream,
        metrics=[m.name for m in resolved],
        identity=judge.identity,
        settings_by_metric={
            m.name: metric_settings(m, truncate=scoring.truncate, cutoffs=used) for m in resolved
        },
        keep=keep,
    )


def judged(
    records: Iterable[RecordLike],
    metrics: Sequence[Metric],
    judge: Judge,
    *,
    cutoffs: Cutoffs,
    options: ScoringOptions,
    hooks: Hooks | None = None,
) -> Iterator[ItemResult]:
    """:func:`evaluate`'s stream of results, for a caller that has fixed the metrics, the
    cut-offs and what the rows record itself (``eval_file``'s passes): nothing is resolved
    again here (``options.cutoffs`` is not read: ``cutoffs`` are the ones in use)."""
    hooks = hooks or Hooks()
    only, mapping = options.only, options.mapping
    entries = (_as_item(r, i, mapping) for i, r in enumerate(records))
    while chunk := list(islice(entries, options.chunk_size)):
        jobs = [
            (entry, metric)
            for entry in chunk
            for metric in metrics
            if only is None or entry.index in only.get(metric.name, ())
        ]
        yield from _score_chunk(jobs, judge, options.truncate, hooks, cutoffs=cutoffs)


def metric_settings(metric: Metric, *, truncate: bool, cutoffs: Cutoffs) -> dict[str, Any]:
    """What a run records of ``metric``'s settings: its own, ``truncate``, and the cut-offs of
    its kinds of decision with a short reference to their sources (a kind not named takes the
    neutral cut-offs)."""
    return {"truncate": truncate, **metric.settings(), **_cutoffs_of(metric, cutoffs)}


def _cutoffs_of(metric: Metric, cutoffs: Cutoffs) -> dict[str, Any]:
    """The cut-offs of ``metric``'s kinds of decision, as its settings record them."""
    return cutoffs.only(kinds_of([metric.name])).record()


def _records_of(records: Any) -> Iterable[Any]:
    """The records of what a user passes: a DataFrame's rows, not its column labels; a mapping
    (a DatasetDict, one record) or a path is refused with what to pass instead."""
    if isinstance(records, (str, Path)):
        raise TypeError(
            f"evaluate() takes records, not a path ({str(records)!r}): use eval_file(path, ...) "
            "or localjudge.data.readers.read_records(path)"
        )
    if isinstance(records, Mapping):
        raise TypeError(
            "evaluate() takes an iterable of records, got a mapping: pass a list of records, or "
            "one split of a DatasetDict (dataset['test'])"
        )
    module = type(records).__module__
    if module.startswith("pandas") and hasattr(records, "columns"):
        rows: list[Any] = records.to_dict("records")  # a pandas DataFrame
        return rows
    return records  # type: ignore[no-any-return]


def score(
    metric: Metric,
    judge: Judge,
    *,
    truncate: bool = False,
    cutoffs: Cutoffs | None = None,
    **fields: Any,
) -> MetricResult:
    """Score one item given as keyword fields (SPEC names or Mastra aliases, and ``id``).

    Raises the item's :class:`~localjudge.errors.ItemError` instead of returning an error row.
    """
    item = make_item(fields, index=0)
    options = ScoringOptions(truncate=truncate, cutoffs=cutoffs)
    [res] = list(evaluate([item], [metric], judge, options))
    if res.error is not None:
        raise res.error
    assert res.result is not None
    return res.result


@dataclass(frozen=True)
class _Failed:
    """A record that failed before any metric could look at it."""

    index: int
    id: str
    error: ItemError


def _as_item(record: RecordLike, index: int, mapping: Mapping[str, str] | None) -> Item | _Failed:
    if isinstance(record, Item):
        return record
    if isinstance(record, Record):
        if record.data is None:
            where = f"line {record.line}" if record.line is not None else f"#{record.index}"
            error = InvalidItemError(record.error or "unreadable record", item_id=where)
            return _Failed(index, where, error)
        record = record.data
    try:
        return make_item(record, index=index, mapping=mapping)
    except InvalidItemError as exc:
        return _Failed(index, exc.item_id or f"#{index}", exc)


@dataclass
class _Pending:
    """An item x metric whose asks await the judge (``truncation``: what was cut so far)."""

    job: int
    metric: Metric
    item: Item
    asks: list[Ask]
    truncation: dict[str, Any] | None = None
    generations: list[Generation[Any]] = field(default_factory=list)
    answers: Answers = field(default_factory=lambda: Answers([], []))
    #: how many of its reason calls did not fit the window (those verdicts have no reason)
    reasons_skipped: int = 0


def _score_chunk(
    jobs: Sequence[tuple[Item | _Failed, Metric]],
    judge: Judge,
    truncate: bool,
    hooks: Hooks,
    *,
    cutoffs: Cutoffs,
) -> list[ItemResult]:
    """Score each (item, metric) of ``jobs``; results in ``jobs`` order. The judge gets every
    decision call of the chunk at once, calls that share an opening next to each other; then,
    for metrics with reasons on, one reason call per decision."""
    results: list[ItemResult | None] = [None] * len(jobs)
    on_result = hooks.on_result

    def done(job: int, result: MetricResult | None, error: ItemError | None) -> None:
        entry, metric = jobs[job]
        if error is not None and error.item_id is None:
            error.item_id = entry.id
        res = ItemResult(entry.index, entry.id, metric.name, result, error)
        results[job] = res
        if on_result is not None:
            on_result(res)

    pending: list[_Pending] = []
    for job, (entry, metric) in enumerate(jobs):
        if isinstance(entry, _Failed):
            done(job, None, entry.error)
            continue
        try:
            built = metric.build(entry)
        except ItemError as exc:
            done(job, None, exc)
            continue
        if isinstance(built, MetricResult):
            done(job, built, None)
        else:
            pending.append(_Pending(job, metric, entry, built))
    decided = _decide(
        judge, pending, truncate=truncate, cutoffs=cutoffs, done=done, on_judging=hooks.on_judging
    )
    _explain(judge, [p for p in decided if p.metric.reasons])
    for p in sorted(decided, key=lambda p: p.job):
        _finish(p, done)
    return [r for r in results if r is not None]


def _decide(
    judge: Judge,
    pending: list[_Pending],
    *,
    truncate: bool,
    cutoffs: Cutoffs,
    done: Callable[[int, MetricResult | None, ItemError | None], None],
    on_judging: OnJudging | None,
) -> list[_Pending]:
    """Ask every decision of ``pending`` and decide each answer; an item too long for the window
    is trimmed and asked again with ``truncate``, else its overflow is its result. Returns the
    jobs whose every decision is made."""
    decided: list[_Pending] = []
    while pending:
        retry: list[_Pending] = []
        if on_judging is not None:
            on_judging([(p.item.index, p.item.id, p.metric.name) for p in pending])
        outcomes = ask_grouped(judge, [[_origin(a.request, p) for a in p.asks] for p in pending])
        for p, outs in zip(pending, outcomes, strict=True):
            # the call that needs the most: its numbers are what the item needs to fit
            overflow = max(
                ((a, o) for a, o in zip(p.asks, outs, strict=True) if isinstance(o, Exception)),
                key=lambda pair: getattr(pair[1], "needed", 0) or 0,
                default=None,
            )
            if overflow is None:
                p.generations = [o for o in outs if not isinstance(o, Exception)]
                # decide_all answers in ask order; from here on, an answer is found by its ask
                p.answers = Answers(p.asks, decide_all(p.asks, p.generations, cutoffs))
                decided.append(p)
                continue
            ask, exc = overflow
            assert isinstance(exc, ContextOverflowError)
            again = _trimmed(p, ask.request, exc, truncate=truncate, done=done)
            retry += [again] if again is not None else []
        pending = retry
    return decided


def _finish(
    p: _Pending, done: Callable[[int, MetricResult | None, ItemError | None], None]
) -> None:
    """The job's result from its answers, with its calls' stats and raw outputs."""
    result = p.metric.finish(p.item, p.answers)
    details = dict(result.details)
    if p.truncation:
        details["truncated"] = p.truncation
    if p.reasons_skipped:
        details["reasons_skipped"] = {"count": p.reasons_skipped, "why": REASON_SKIPPED}
    gens = p.generations
    done(
        p.job,
        replace(
            result,
            stats=sum_stats([g.stats for g in gens]),
            cached=all(g.cached for g in gens),
            raw="\n".join(g.raw for g in gens),
            calls=sum(not g.cached for g in gens),
            details=details,
        ),
        None,
    )


def _trimmed(
    p: _Pending,
    request: JudgeRequest,
    overflow: ContextOverflowError,
    *,
    truncate: bool,
    done: Callable[[int, MetricResult | None, ItemError | None], None],
) -> _Pending | None:
    """The job again with its item trimmed until ``request`` would fit (``truncate``), or None
    when it cannot be (its overflow is then its result)."""
    try:
        if not truncate:
            raise overflow
        trimmed, record = trim_contexts(p.item, request, overflow, p.truncation)
    except ContextOverflowError as error:
        done(p.job, None, error)
        return None
    asks = p.metric.build(trimmed)
    assert isinstance(asks, list)
    return _Pending(p.job, p.metric, trimmed, asks, record)


def _origin(request: JudgeRequest, p: _Pending) -> JudgeRequest:
    made = protocol_ref(p.metric.protocol)
    origin = CallOrigin(p.metric.name, p.item.id, (made.name, made.fingerprint))
    return replace(request, origin=origin)


def _explain(judge: Judge, decided: Sequence[_Pending]) -> None:
    """Ask one reason per decision that wants one, showing the verdict already made; the
    reasons go into the answers, the calls' generations are added to the job's. A reason call
    that does not fit the window is dropped (counted in the job's ``reasons_skipped``): its
    verdict keeps no reason, and no decision is asked again."""
    wanted = [[a for a in p.asks if a.decision is not None and a.explain] for p in decided]
    requests = [
        [_origin(reason_request(ask, p.answers[ask]), p) for ask in asks]
        for p, asks in zip(decided, wanted, strict=True)
    ]
    for p, asks, outs in zip(decided, wanted, ask_grouped(judge, requests), strict=True):
        for ask, out in zip(asks, outs, strict=True):
            if isinstance(out, ContextOverflowError):
                p.reasons_skipped += 1
                continue
            p.answers = p.answers.with_reason(ask, out.value.reason)  # type: ignore[attr-defined]
            p.generations.append(out)
