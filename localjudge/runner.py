"""evaluate(): records x metrics -> results, streaming.

Items are processed in chunks; inside a chunk each metric runs over all items before the next
metric starts, so consecutive judge calls share their metric's instruction prefix and llama.cpp
reuses its KV cache for it. Results come out in input order (item, then metric order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from pydantic import BaseModel

from localjudge.errors import InvalidItemError, ItemError
from localjudge.items import Item, make_item
from localjudge.judge import Judge
from localjudge.metrics import METRICS, Metric, MetricResult

#: items per chunk: large enough to amortise the prefix switch between metrics, small enough
#: that results stream out steadily
CHUNK_SIZE = 16


@dataclass(frozen=True)
class ItemResult:
    """One item x metric: a score (``result``) or a per-item failure (``error``), never both."""

    index: int
    id: str
    metric: str
    result: MetricResult | None
    error: ItemError | None


#: what evaluate() accepts per record: a mapping, a pydantic model, a prepared Item, or an
#: ItemError standing for a record that could not even be read (a malformed JSONL line)
RecordLike = Mapping[str, Any] | BaseModel | Item | ItemError


def resolve_metrics(
    metrics: Sequence[Metric | str | type[Metric]], judge: Judge | None
) -> list[Metric]:
    """Metric instances as given; names (``"recall"``) and classes are built with ``judge``."""
    resolved: list[Metric] = []
    for m in metrics:
        if isinstance(m, Metric):
            resolved.append(m)
            continue
        cls = METRICS.get(m) if isinstance(m, str) else m
        if cls is None:
            raise ValueError(f"unknown metric {m!r}; expected one of {', '.join(METRICS)}")
        if judge is None:
            raise ValueError(f"metric {m!r} given by name needs judge=")
        resolved.append(cls(judge))
    names = [m.name for m in resolved]
    if len(set(names)) != len(names):
        raise ValueError(f"metrics repeated: {names}")
    return resolved


def evaluate(
    records: Iterable[RecordLike],
    metrics: Sequence[Metric | str | type[Metric]],
    judge: Judge | None = None,
    *,
    mapping: Mapping[str, str] | None = None,
    chunk_size: int = CHUNK_SIZE,
    on_result: Callable[[ItemResult], None] | None = None,
) -> Iterator[ItemResult]:
    """Score every record with every metric, yielding results as chunks finish.

    Per-item problems (invalid fields, a prompt too long for the window) become results with
    ``error`` set; every other exception propagates and stops the run. ``on_result`` is called
    as each item x metric finishes (for progress display), before the chunk is yielded.
    """
    resolved = resolve_metrics(metrics, judge)
    entries = (_as_item(r, i, mapping) for i, r in enumerate(records))
    while chunk := list(islice(entries, chunk_size)):
        by_metric = [[_score(metric, entry, on_result) for entry in chunk] for metric in resolved]
        for row in zip(*by_metric, strict=True):
            yield from row


@dataclass(frozen=True)
class _Failed:
    """A record that failed before any metric could look at it."""

    index: int
    id: str
    error: ItemError


def _as_item(record: RecordLike, index: int, mapping: Mapping[str, str] | None) -> Item | _Failed:
    if isinstance(record, Item):
        return record
    if isinstance(record, ItemError):
        return _Failed(index, record.item_id or f"#{index}", record)
    try:
        return make_item(record, index=index, mapping=mapping)
    except InvalidItemError as exc:
        return _Failed(index, exc.item_id or f"#{index}", exc)


def _score(
    metric: Metric, entry: Item | _Failed, on_result: Callable[[ItemResult], None] | None
) -> ItemResult:
    if isinstance(entry, _Failed):
        res = ItemResult(entry.index, entry.id, metric.name, None, entry.error)
    else:
        try:
            res = ItemResult(entry.index, entry.id, metric.name, metric.score_item(entry), None)
        except ItemError as exc:
            if exc.item_id is None:
                exc.item_id = entry.id
            res = ItemResult(entry.index, entry.id, metric.name, None, exc)
    if on_result is not None:
        on_result(res)
    return res
