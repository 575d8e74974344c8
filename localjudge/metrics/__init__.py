"""The three metrics. ``METRICS`` maps the CLI names to their classes."""

from localjudge.metrics.base import Metric, MetricResult
from localjudge.metrics.position import ContextPosition
from localjudge.metrics.recall import ContextRecall
from localjudge.metrics.relevance import ContextRelevance

METRICS: dict[str, type[Metric]] = {
    "recall": ContextRecall,
    "position": ContextPosition,
    "relevance": ContextRelevance,
}

__all__ = [
    "METRICS",
    "ContextPosition",
    "ContextRecall",
    "ContextRelevance",
    "Metric",
    "MetricResult",
]
