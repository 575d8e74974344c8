"""A judge's cut-offs: the soft value at which each kind of decision turns from no to yes.

The metrics read a decision's soft value from the probabilities of its allowed values
(:mod:`localjudge.metrics.asks`); a cut-off fitted on labelled data turns it into the hard
verdict. The bundled judges ship cut-offs fitted on the development sets
(``benchmarks/fit_cutoffs.py``) in their registry entries; ``localjudge calibrate`` fits a
user's own and stores them in the user registry (:mod:`localjudge.judge.registry_edit`).
A kind without cut-offs takes the value the judge chose (its argmax).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NO_CUTOFFS", "Cutoffs"]


@dataclass(frozen=True)
class Cutoffs:
    """Cut-offs per kind of decision (``"recall.supported"``), and where they came from.

    A yes/no decision is yes when its soft value (the probability of yes) is at least its one
    cut-off; a graded one gets the number of its ascending cut-offs that its expected grade
    reaches."""

    values: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None, source: str = "") -> Cutoffs:
        """Read ``{"kind": number or [numbers], ...}``: finite numbers, ascending."""
        values: dict[str, tuple[float, ...]] = {}
        for kind, raw in (data or {}).items():
            numbers = raw if isinstance(raw, (list, tuple)) else [raw]
            try:
                parsed = tuple(float(x) for x in numbers)
            except (TypeError, ValueError):
                raise ValueError(f"cut-offs of {kind!r} must be numbers, got {raw!r}") from None
            if not parsed or not all(math.isfinite(x) for x in parsed):
                raise ValueError(f"cut-offs of {kind!r} must be finite numbers, got {raw!r}")
            if list(parsed) != sorted(parsed):
                raise ValueError(f"cut-offs of {kind!r} must ascend, got {raw!r}")
            values[str(kind)] = parsed
        return cls(values, source)

    def as_json(self) -> dict[str, Any]:
        """The cut-offs as results and registries record them (one number for a yes/no kind)."""
        return {k: v[0] if len(v) == 1 else list(v) for k, v in sorted(self.values.items())}

    def record(self) -> dict[str, Any]:
        """What a run records: the cut-offs and their source (empty: the judge's argmax)."""
        return {"cutoffs": self.as_json(), "cutoffs_source": self.source if self else "argmax"}

    def merged(self, other: Cutoffs) -> Cutoffs:
        """These cut-offs with ``other``'s kinds replacing theirs."""
        source = " + ".join(s for s in (self.source, other.source) if s)
        return Cutoffs({**self.values, **other.values}, source)

    def __bool__(self) -> bool:
        return bool(self.values)


NO_CUTOFFS = Cutoffs()
