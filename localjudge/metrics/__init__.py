"""The metrics. ``METRICS`` is the one list of them: CLI names to classes, in CLI order.

Adding a metric means writing its module (a :class:`Metric` subclass: prompt, schema, scoring,
labels and report rows) and adding it here.
"""

from localjudge.metrics.base import Metric, MetricResult, MetricSettings
from localjudge.metrics.position import ContextPosition
from localjudge.metrics.recall import ContextRecall
from localjudge.metrics.relevance import ContextRelevance

METRICS: dict[str, type[Metric]] = {
    cls.name: cls for cls in (ContextRecall, ContextPosition, ContextRelevance)
}

__all__ = [
    "METRICS",
    "ContextPosition",
    "ContextRecall",
    "ContextRelevance",
    "Metric",
    "MetricResult",
    "MetricSettings",
]
