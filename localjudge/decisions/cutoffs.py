"""A judge's cut-offs: the soft value at which each kind of decision turns from no to yes,
the combinations of readings that give a kind's soft value, and where each came from.

A decision's soft value is read from the probabilities of its allowed values
(:mod:`localjudge.decisions.decide`); a cut-off fitted on labelled data turns it into the hard
verdict. The bundled judges ship cut-offs fitted on the development sets in ``cutoffs.json``
(:mod:`localjudge.decisions.shipped`, built from judged rows by ``fitting/build.py``);
``localjudge calibrate`` fits a user's own and stores them in the user registry
(:mod:`localjudge.decisions.cutoff_registry`). A kind without a cut-off takes the neutral
cut-offs, the larger probability (:func:`~localjudge.decisions.kinds.neutral`).

:meth:`Cutoffs.from_json` refuses any kind not in :data:`~localjudge.decisions.kinds.KINDS`.
Each kind keeps where its cut-offs came from (:class:`Provenance`); results record the values
and a short reference (:meth:`Provenance.ref`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from localjudge.decisions.kinds import KINDS, READINGS, RETIRED_READINGS, neutral

__all__ = ["NO_CUTOFFS", "Combination", "Cutoffs", "Provenance"]


@dataclass(frozen=True)
class Provenance:
    """Where one kind's cut-offs came from: ``origin`` (``"built-in"``, ``"calibrate"``), the
    labelled ``file`` they were fitted on (its name, never a machine path) and its ``sha256``,
    the ``date`` (YYYY-MM-DD) and the ``heldout`` evidence (figure, interval, groups)."""

    origin: str
    file: str = ""
    sha256: str = ""
    date: str = ""
    heldout: Mapping[str, Any] = field(default_factory=dict)

    def ref(self) -> str:
        """The short reference results record: ``origin:file@sha256[:12]``."""
        tail = f":{self.file}" if self.file else ""
        return f"{self.origin}{tail}" + (f"@{self.sha256[:12]}" if self.sha256 else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "file": self.file,
            "sha256": self.sha256,
            "date": self.date,
            "heldout": dict(self.heldout),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Provenance:
        """Read a stored provenance; a plain string (registries before per-kind sources) is
        kept as the origin."""
        if isinstance(data, str):
            return cls(origin=data[:80])
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: a source must be an object, got {data!r}")
        heldout = data.get("heldout") or {}
        return cls(
            origin=str(data.get("origin", "")),
            file=str(data.get("file", "")),
            sha256=str(data.get("sha256", "")),
            date=str(data.get("date", "")),
            heldout=dict(heldout) if isinstance(heldout, Mapping) else {},
        )


@dataclass(frozen=True)
class Combination:
    """A kind's soft value as a fitted function of its readings (:data:`READINGS`).

    ``z`` is the weighted sum of the readings. A yes/no kind: P(yes) = sigmoid(z + c) with the
    one intercept c (logistic regression). A graded kind (0-3): P(grade >= k) =
    sigmoid(z - t_k) with three ascending thresholds (a proportional-odds model), so it gives
    the probability of each grade, and the soft value is the expected grade as before."""

    weights: Mapping[str, float]
    intercepts: tuple[float, ...]

    def probs(self, readings: Mapping[str, float]) -> tuple[float, ...] | None:
        """P(yes) (one value) or the probability of each grade, lowest first; None when a
        reading it weighs is missing."""
        if any(name not in readings for name in self.weights):
            return None
        z = sum(w * readings[name] for name, w in self.weights.items())
        if len(self.intercepts) == 1:
            return (_sigmoid(z + self.intercepts[0]),)
        at_least = [1.0, *(_sigmoid(z - t) for t in self.intercepts), 0.0]
        return tuple(max(at_least[g] - at_least[g + 1], 0.0) for g in range(len(at_least) - 1))

    def levels(self, readings: Mapping[str, float]) -> tuple[float, ...] | None:
        """The probability of each hard value, lowest first: (P(no), P(yes)), or that of each
        grade (what :func:`~localjudge.decisions.decide.soft_value` takes); None when a reading
        it weighs is missing."""
        probs = self.probs(readings)
        if probs is None or len(probs) > 1:
            return probs
        return (1.0 - probs[0], probs[0])

    def as_json(self) -> dict[str, Any]:
        return {"weights": dict(sorted(self.weights.items())), "intercepts": list(self.intercepts)}

    @classmethod
    def from_json(cls, kind: str, data: Any) -> Combination:
        """Read a stored combination of ``kind``: known readings, finite numbers, one intercept
        for a yes/no kind and three ascending ones for a graded kind."""
        spec = KINDS.get(kind)
        if spec is None:
            raise ValueError(
                f"unknown kind of decision {kind!r}; expected one of {', '.join(KINDS)}"
            )
        if not isinstance(data, Mapping) or not isinstance(data.get("weights"), Mapping):
            raise ValueError(f"the combination of {kind!r} needs a 'weights' object")
        unknown = [k for k in data["weights"] if k not in READINGS]
        if unknown and unknown[0] in RETIRED_READINGS:
            raise ValueError(
                f"the combination of {kind!r} weighs {unknown[0]!r}, a reading this release "
                f"no longer makes: {RETIRED_READINGS[unknown[0]]}"
            )
        if unknown:
            known = ", ".join(READINGS)
            raise ValueError(
                f"the combination of {kind!r} weighs {unknown[0]!r}; readings: {known}"
            )
        try:
            weights = {str(k): float(v) for k, v in data["weights"].items()}
            intercepts = tuple(float(x) for x in data.get("intercepts", ()))
        except (TypeError, ValueError):
            raise ValueError(f"the combination of {kind!r} must hold numbers") from None
        numbers = [*weights.values(), *intercepts]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError(f"the combination of {kind!r} must hold finite numbers")
        if len(intercepts) != spec.count or list(intercepts) != sorted(intercepts):
            raise ValueError(
                f"the combination of {kind!r} takes {spec.count} ascending intercept(s), "
                f"got {list(intercepts)}"
            )
        return cls(weights, intercepts)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


@dataclass(frozen=True)
class Cutoffs:
    """Cut-offs per kind of decision (``"recall.supported"``), and where each came from.

    A yes/no decision is yes when its soft value (the probability of yes) is at least its one
    cut-off; a graded one gets the number of its ascending cut-offs that its expected grade
    reaches. ``sources`` holds a :class:`Provenance` per kind (a kind without one: ``api``, set
    by the caller)."""

    values: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    sources: Mapping[str, Provenance] = field(default_factory=dict)
    #: per kind, the fitted function of its readings that gives its soft value (a kind without
    #: one: the decision call's own probabilities)
    combinations: Mapping[str, Combination] = field(default_factory=dict)

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any] | None,
        source: Provenance | Mapping[str, Provenance] | str | None = None,
        combinations: Mapping[str, Any] | None = None,
    ) -> Cutoffs:
        """Read ``{"kind": number or [numbers], ...}``: known kinds only (:data:`KINDS`), each
        with its number of cut-offs, finite, ascending and inside its soft value's range.
        ``source``: one provenance for every kind (a string: its origin), or one per kind;
        ``combinations``: ``{"kind": {"weights": {...}, "intercepts": [...]}}``
        (:class:`Combination`)."""
        values: dict[str, tuple[float, ...]] = {}
        for kind, raw in (data or {}).items():
            values[str(kind)] = _parse(str(kind), raw)
        combined = {
            str(k): Combination.from_json(str(k), v) for k, v in (combinations or {}).items()
        }
        kinds = set(values) | set(combined)
        if isinstance(source, str):
            source = Provenance(source)
        if isinstance(source, Provenance) or source is None:
            one = source or Provenance("api")
            sources = dict.fromkeys(kinds, one)
        else:
            sources = {k: source.get(k, Provenance("api")) for k in kinds}
        return cls(values, sources, combined)

    def of(self, kind: str) -> tuple[float, ...]:
        """The cut-offs a decision of ``kind`` is decided against: its own, else the neutral
        ones (:func:`~localjudge.decisions.kinds.neutral`)."""
        return tuple(self.values.get(kind) or neutral(KINDS[kind].graded))

    @property
    def kinds(self) -> list[str]:
        """The kinds that have a cut-off or a combination, sorted."""
        return sorted(set(self.values) | set(self.combinations))

    def as_json(self) -> dict[str, Any]:
        """The cut-offs as results and registries record them (one number for a yes/no kind)."""
        return {k: v[0] if len(v) == 1 else list(v) for k, v in sorted(self.values.items())}

    def combinations_json(self) -> dict[str, Any]:
        """The combinations as results and registries record them."""
        return {k: c.as_json() for k, c in sorted(self.combinations.items())}

    def refs(self) -> dict[str, str]:
        """Each kind's short source reference."""
        return {k: self.source(k).ref() for k in self.kinds}

    def source(self, kind: str) -> Provenance:
        return self.sources.get(kind) or Provenance("api")

    def record(self) -> dict[str, Any]:
        """What a run records: the cut-offs, the combinations (when there are any) and a short
        reference to each kind's source (a kind not named takes the neutral cut-offs, the larger
        probability of the decision call's own answer)."""
        out = {"cutoffs": self.as_json(), "cutoffs_source": self.refs()}
        if self.combinations:
            out["combinations"] = self.combinations_json()
        return out

    def merged(self, other: Cutoffs) -> Cutoffs:
        """These cut-offs with ``other``'s kinds replacing theirs (with their sources): a kind
        ``other`` has is taken whole from it, its cut-off and its combination."""
        mine = set(self.kinds) - set(other.kinds)
        sources = {k: self.source(k) for k in mine}
        sources.update({k: other.source(k) for k in other.kinds})
        values = {k: v for k, v in self.values.items() if k in mine}
        combined = {k: c for k, c in self.combinations.items() if k in mine}
        return Cutoffs({**values, **other.values}, sources, {**combined, **other.combinations})

    def only(self, kinds: Collection[str]) -> Cutoffs:
        """These cut-offs restricted to ``kinds``."""
        return Cutoffs(
            {k: v for k, v in self.values.items() if k in kinds},
            {k: s for k, s in self.sources.items() if k in kinds},
            {k: c for k, c in self.combinations.items() if k in kinds},
        )

    def __bool__(self) -> bool:
        return bool(self.values) or bool(self.combinations)


def _parse(kind: str, raw: Any) -> tuple[float, ...]:
    spec = KINDS.get(kind)
    if spec is None:
        raise ValueError(f"unknown kind of decision {kind!r}; expected one of {', '.join(KINDS)}")
    numbers = raw if isinstance(raw, (list, tuple)) else [raw]
    try:
        parsed = tuple(float(x) for x in numbers)
    except (TypeError, ValueError):
        raise ValueError(f"cut-offs of {kind!r} must be numbers, got {raw!r}") from None
    if len(parsed) != spec.count:
        raise ValueError(f"{kind!r} takes {spec.count} cut-off(s), got {len(parsed)}: {raw!r}")
    if not all(math.isfinite(x) for x in parsed):
        raise ValueError(f"cut-offs of {kind!r} must be finite numbers, got {raw!r}")
    if list(parsed) != sorted(parsed):
        raise ValueError(f"cut-offs of {kind!r} must ascend, got {raw!r}")
    if not all(0.0 <= x <= spec.high for x in parsed):
        raise ValueError(
            f"cut-offs of {kind!r} must lie in its soft value's range [0, {spec.high:g}], "
            f"got {raw!r}"
        )
    return parsed


NO_CUTOFFS = Cutoffs()
