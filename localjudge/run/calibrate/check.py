"""The labels ``calibrate`` fits on, checked before anything is judged: whether each is
accepted (:mod:`localjudge.run.labels`, the one label check), the groups its held-out split
keeps together, and what each kind of decision can be fitted on (:func:`check_kinds`).

Pure functions of a record's fields. An item's group (:func:`group_of`) is its ``source.qid``,
else its top-level ``group``, else its question (``user_input``): items that ask the same
question are one group, so a question never sits on both sides of the split. Only an item with
none of them is a group of its own (its id).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from localjudge.data.item import make_item
from localjudge.errors import InvalidItemError, UsageError
from localjudge.metrics.position import decision_for
from localjudge.run.labels import (
    LABELS_HINT,
    human_value,
    item_where,
    label_problem,
    n_pieces,
    refuse_labels,
    spec,
)

__all__ = [
    "GROUP_WAYS",
    "MIN_DECISIONS",
    "MIN_GROUPS",
    "TOO_FEW_GROUPS",
    "Group",
    "Grouping",
    "LabelCheck",
    "LabelledKind",
    "check_kinds",
    "group_of",
    "grouping",
    "per_piece",
    "position_kind",
]

#: fewer labelled decisions than this (or one class only) are not fitted
MIN_DECISIONS = 20


class LabelledKind(Protocol):
    """A kind of decision as the check sees it
    (:class:`localjudge.run.calibrate.calibration.Kind`)."""

    @property
    def name(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def graded(self) -> bool: ...


def position_kind(record: Mapping[str, Any], index: int) -> str | None:
    """The kind of decision position asks of ``record``'s passages: with an EXPECTED ANSWER
    (a reference or a response) ``position.relevant_answer``, else ``position.relevant``
    (None for a record position cannot read)."""
    try:
        return decision_for(make_item(record, index=index)).kind
    except InvalidItemError:
        return None


# --------------------------------------------------------------------------- groups

#: where an item's group comes from, in the order they are looked for
GROUP_WAYS = ("source.qid", "group", "user_input", "id")
#: fewer groups than this leave a side of the held-out split (half of the groups,
#: :func:`~localjudge.decisions.fit.split_groups`) with fewer than two
MIN_GROUPS = 4
#: why a kind with fewer than MIN_GROUPS groups is not fitted
TOO_FEW_GROUPS = (
    f"the held-out check needs at least {MIN_GROUPS} groups, 2 on each side of its split"
)


@dataclass(frozen=True)
class Group:
    """The group an item is split and resampled with (``key``), and where it came from
    (``way``: one of :data:`GROUP_WAYS`)."""

    key: str
    way: str


def group_of(record: Mapping[str, Any], index: int = 0) -> Group:
    """``record``'s group: its ``source.qid``, else its ``group``, else its question
    (``user_input``, runs of white space as one space), else its id (``#index`` without one)."""
    source = record.get("source")
    for way, value in (
        ("source.qid", source.get("qid") if isinstance(source, Mapping) else None),
        ("group", record.get("group")),
        ("user_input", record.get("user_input", record.get("input"))),
    ):
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            key = " ".join(str(value).split())
            if key:
                return Group(key, way)
    item_id = record.get("id")
    return Group(str(item_id) if item_id is not None else f"#{index}", "id")


@dataclass(frozen=True)
class Grouping:
    """Every record's group (:func:`grouping`), by input index."""

    groups: tuple[Group, ...]

    def keys(self, indices: Iterable[int]) -> set[str]:
        """The distinct groups of the records ``indices``."""
        return {self.groups[n].key for n in indices}

    def describe(self, indices: Iterable[int]) -> str:
        """How the records ``indices`` were grouped, e.g. ``grouped by source.qid: 25 groups
        of 50 items``; records grouped different ways are counted per way."""
        picked = [self.groups[n] for n in indices]
        items = Counter(g.way for g in picked)
        parts = []
        for way in GROUP_WAYS:
            if items[way]:
                n = len({g.key for g in picked if g.way == way})
                parts.append(f"by {way}: {_count(n, 'group')} of {_count(items[way], 'item')}")
        return "grouped " + (", ".join(parts) if parts else "by nothing: no items")


def grouping(records: Sequence[Mapping[str, Any]]) -> Grouping:
    """The group of each of ``records`` (:func:`group_of`)."""
    return Grouping(tuple(group_of(r, n) for n, r in enumerate(records)))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# --------------------------------------------------------------------------- the check


@dataclass(frozen=True)
class LabelCheck:
    """What the labels of a file give each kind of decision asked, known before anything is
    judged (:func:`check_kinds`)."""

    #: per kind asked: the records (by index) whose labels it is fitted on
    usable: Mapping[str, tuple[int, ...]]
    #: per kind asked: the records whose label it leaves out (a recall share between 0 and 1)
    left_out: Mapping[str, tuple[int, ...]]
    #: per kind asked that cannot be fitted, why
    unfit: Mapping[str, str]
    #: every record's group for the held-out split
    groups: Grouping
    #: the kinds asked, in order
    kinds: tuple[LabelledKind, ...]

    @property
    def only(self) -> dict[str, set[int]]:
        """Per metric, the records to judge: those the kinds it can fit are fitted on."""
        out: dict[str, set[int]] = {}
        for kind in self.kinds:
            if kind.name in self.usable and kind.name not in self.unfit:
                out.setdefault(kind.metric, set()).update(self.usable[kind.name])
        return out


def per_piece(kind: LabelledKind) -> bool:
    """Whether ``kind``'s label is a list, one per context piece (else one value per item)."""
    return spec(kind.label).per_piece


def check_kinds(
    records: Sequence[Mapping[str, Any]],
    kinds: Sequence[LabelledKind],
    *,
    lines: Sequence[int | None] | None = None,
    path: str | None = None,
) -> LabelCheck:
    """Check the labels ``kinds`` read in ``records`` and what each kind can be fitted on
    (:func:`localjudge.run.calibrate.calibration.check_labels`, for the kinds of decision
    ``kinds``)."""
    names = list(dict.fromkeys(k.metric for k in kinds))
    prefix = f"{path}: " if path else ""
    labelled = [n for n, r in enumerate(records) if "labels" in r]
    refuse_labels(
        (
            f"{item_where(records[n], n, lines[n] if lines is not None else None)}: {problem}"
            for n in labelled
            if (problem := label_problem(records[n]["labels"], n_pieces(records[n])))
        ),
        path,
    )
    if not labelled:
        raise UsageError(f"{prefix}no record has a 'labels' object", hint=LABELS_HINT)
    usable: dict[str, list[int]] = {k.name: [] for k in kinds}
    left_out: dict[str, list[int]] = {k.name: [] for k in kinds}
    # position asks each item one of its two kinds: which one, read once per item
    asked = (
        {n: position_kind(records[n], n) for n in labelled}
        if any(k.metric == "position" for k in kinds)
        else {}
    )
    for kind in kinds:
        for n in labelled:
            value = records[n]["labels"].get(kind.label)
            if value is None:
                continue
            if kind.metric == "position" and asked[n] != kind.name:
                continue
            fitted = per_piece(kind) or value in (0, 1)
            (usable if fitted else left_out)[kind.name].append(n)
    groups = grouping(records)
    unfit = {
        kind.name: why
        for kind in kinds
        if (why := _unfit(kind, records, usable[kind.name], left_out[kind.name], groups))
    }
    if len(unfit) == len(kinds):
        reasons = "; ".join(f"{k}: {why}" for k, why in unfit.items())
        raise UsageError(
            f"{prefix}nothing to fit cut-offs on for {', '.join(names)}: {reasons}",
            hint=f"label more items: a few hundred labelled decisions from at least {MIN_GROUPS} "
            "groups (items that belong together share a source.qid, a group or a user_input)",
        )
    return LabelCheck(
        {k: tuple(v) for k, v in usable.items()},
        {k: tuple(v) for k, v in left_out.items()},
        unfit,
        groups,
        tuple(kinds),
    )


#: how position asks each of its kinds (:func:`position_kind`)
_ASKED = {
    "position.relevant": "with the question alone (no reference, no response)",
    "position.relevant_answer": "with an EXPECTED ANSWER (a reference or a response)",
}


def _unfit(
    kind: LabelledKind,
    all_records: Sequence[Mapping[str, Any]],
    usable: Sequence[int],
    left_out: Collection[int],
    groups: Grouping,
) -> str:
    """Why ``kind`` cannot be fitted on the (checked) labels of the records ``usable``, known
    before judging ("" when it may be)."""
    label = f"labels.{kind.label}"
    records = [all_records[n] for n in usable]
    if not records:
        way = _ASKED.get(kind.name)
        if way and any(kind.label in (r.get("labels") or {}) for r in all_records):
            return f"no item with {label} is asked {way}"
        shares = f" ({len(left_out)} shares between 0 and 1 left out)" if left_out else ""
        return f"no item has {label}{' 0 or 1' if left_out else ''}{shares}"
    if per_piece(kind):
        values = [
            human_value(v, graded=kind.graded) for r in records for v in r["labels"][kind.label]
        ]
        if len(values) < MIN_DECISIONS or len(set(values)) < 2:
            return f"{len(values)} labelled decisions (at least {MIN_DECISIONS}, both classes)"
    elif len({r["labels"][kind.label] for r in records}) < 2:
        value = records[0]["labels"][kind.label]
        return f"{len(records)} items, every one labelled {value} (both classes needed)"
    if len(groups.keys(usable)) < MIN_GROUPS:
        return f"{groups.describe(usable)}; {TOO_FEW_GROUPS}"
    return ""
