"""Where a judge's cut-offs live: the registries, keyed by the judge file's sha256.

The package ships its cut-offs in ``cutoffs.json`` (:mod:`localjudge.decisions.shipped`,
written by ``fitting/build.py``). The user registry (``models.json``) may hold a
``"cutoffs"`` object: ``{sha256: {"values": {kind: number or [numbers]}, "sources": {kind:
provenance}, "combinations": {kind: combination}}}``
(:class:`~localjudge.decisions.cutoffs.Provenance`,
:class:`~localjudge.decisions.cutoffs.Combination`, optional; an older entry's one
``"source"`` string serves every kind). The user's come from ``localjudge calibrate`` and
replace the built-in ones kind by kind; ``localjudge calibrate --reset`` removes the user's
(:func:`reset_cutoffs`), so the built-in ones apply again.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from localjudge.decisions.cutoffs import NO_CUTOFFS, Cutoffs, Provenance
from localjudge.decisions.shipped import Shipped, ShippedJudge, ShippedKind
from localjudge.errors import ModelError
from localjudge.judge.models import read_user_registry, user_registry_path, write_user_registry
from localjudge.judge.protocol import JudgeIdentity

__all__ = [
    "builtin_cutoffs",
    "cutoffs_of",
    "entry_json",
    "judge_cutoffs",
    "reset_cutoffs",
    "shipped",
    "shipped_judge",
    "store_cutoffs",
    "user_cutoffs",
]


def judge_cutoffs(identity: JudgeIdentity) -> Cutoffs:
    """The cut-offs of the judge with ``identity``: the built-in ones, then the user's."""
    return builtin_cutoffs(identity.sha256).merged(user_cutoffs(identity.sha256))


@lru_cache(maxsize=8)
def builtin_cutoffs(sha256: str) -> Cutoffs:
    """The cut-offs the package ships for the judge file with this sha256 (none: empty): its
    fitted kinds and its exceptions (:mod:`localjudge.decisions.shipped`; a neutral kind takes
    the neutral cut-offs). Read once per process (package data does not change under it)."""
    return cutoffs_of(shipped_judge(sha256))


@lru_cache(maxsize=1)
def shipped() -> Shipped:
    """What the package ships (``cutoffs.json``, package data)."""
    text = resources.files("localjudge.judge.models").joinpath("cutoffs.json").read_text("utf-8")
    try:
        return Shipped.model_validate_json(text)
    except ValueError as exc:
        raise ModelError(f"built-in cutoffs.json: {exc}") from exc


def shipped_judge(sha256: str) -> ShippedJudge | None:
    """What ships for the judge file with this sha256 (None: nothing)."""
    return shipped().judge(sha256)


def cutoffs_of(entry: ShippedJudge | None) -> Cutoffs:
    """An entry's fitted kinds and exceptions as :class:`Cutoffs`, each with its provenance
    (its ``ref``, what a run records, and its status and why)."""
    if entry is None:
        return NO_CUTOFFS
    values: dict[str, Any] = {}
    combinations: dict[str, Any] = {}
    sources: dict[str, Provenance] = {}
    for kind, k in entry.kinds.items():
        if k.status == "neutral":
            continue
        if k.cutoffs is not None:
            values[kind] = k.cutoffs
        if k.combination is not None:
            combinations[kind] = k.combination.model_dump()
        sources[kind] = _provenance(k.ref or "built-in", k)
    try:
        return Cutoffs.from_json(values, sources, combinations)
    except ValueError as exc:
        raise ModelError(f"built-in cutoffs.json: {entry.alias}: {exc}") from exc


def _provenance(ref: str, kind: ShippedKind) -> Provenance:
    """A shipped kind's provenance, read back from its ``ref`` (``origin:file@sha256``)."""
    origin, _, rest = ref.partition(":")
    file, _, sha = rest.partition("@")
    return Provenance(
        origin, file=file, sha256=sha, heldout={"status": kind.status, "why": kind.why}
    )


def user_cutoffs(sha256: str) -> Cutoffs:
    """The cut-offs ``localjudge calibrate`` stored for this judge file (none: empty)."""
    data = read_user_registry()
    return _entry(data, sha256, str(user_registry_path())) if data is not None else NO_CUTOFFS


def store_cutoffs(sha256: str, cutoffs: Cutoffs) -> None:
    """Store ``cutoffs`` for the judge file with this sha256 in the user registry (replacing
    that judge's kinds that ``cutoffs`` has, keeping its others), each with its source."""
    data = read_user_registry() or {"judges": []}
    table = dict(data.get("cutoffs") or {})
    table[sha256] = entry_json(user_cutoffs(sha256).merged(cutoffs))
    write_user_registry({**data, "cutoffs": table})


def reset_cutoffs(sha256: str, kinds: set[str] | None = None) -> list[str]:
    """Remove the user's cut-offs of this judge file (only ``kinds`` when given), so that the
    built-in ones (or the neutral ones) apply again; returns the kinds removed."""
    data = read_user_registry()
    mine = user_cutoffs(sha256)
    removed = sorted(k for k in mine.kinds if kinds is None or k in kinds)
    if data is None or not removed:
        return []
    table = dict(data.get("cutoffs") or {})
    kept = mine.only(set(mine.kinds) - set(removed))
    if kept:
        table[sha256] = entry_json(kept)
    else:
        table.pop(sha256, None)
    write_user_registry({**data, "cutoffs": table})
    return removed


def entry_json(cutoffs: Cutoffs) -> dict[str, Any]:
    """A registry entry: the values, each kind's provenance and the combinations."""
    entry: dict[str, Any] = {
        "values": cutoffs.as_json(),
        "sources": {k: cutoffs.source(k).as_json() for k in cutoffs.kinds},
    }
    if cutoffs.combinations:
        entry["combinations"] = cutoffs.combinations_json()
    return entry


def _entry(data: Mapping[str, Any], sha256: str, where: str) -> Cutoffs:
    table = data.get("cutoffs") or {}
    entry = table.get(sha256) if isinstance(table, Mapping) else None
    if entry is None:
        return NO_CUTOFFS
    if not isinstance(entry, Mapping) or not isinstance(entry.get("values"), Mapping):
        raise ModelError(f"{where}: cutoffs[{sha256[:12]}...] needs a 'values' object")
    try:
        sources = entry.get("sources")
        combined = entry.get("combinations")
        if combined is not None and not isinstance(combined, Mapping):
            raise ValueError("'combinations' must be an object")
        if isinstance(sources, Mapping):
            per_kind = {str(k): Provenance.from_json(v, where) for k, v in sources.items()}
            return Cutoffs.from_json(entry["values"], per_kind, combined)
        one = Provenance.from_json(entry.get("source", "registry"), where)
        return Cutoffs.from_json(entry["values"], one, combined)
    except ValueError as exc:
        raise ModelError(f"{where}: {exc}") from exc
