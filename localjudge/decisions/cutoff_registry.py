"""Where a judge's cut-offs live: the registries, keyed by the judge file's sha256.

The package ships its cut-offs in ``cutoffs.json`` (:mod:`localjudge.decisions.shipped`,
written by ``fitting/build.py``). The user registry (``models.json``) may hold a
``"cutoffs"`` object: ``{sha256: {"values": {kind: number or [numbers]}, "sources": {kind:
provenance}, "combinations": {kind: combination}, "protocol": {"name", "fingerprint"}}}``
(:class:`~localjudge.decisions.cutoffs.Provenance`,
:class:`~localjudge.decisions.cutoffs.Combination`, optional; an older entry's one
``"source"`` string serves every kind). The user's come from ``localjudge calibrate`` and
replace the built-in ones kind by kind; ``localjudge calibrate --reset`` removes the user's
(:func:`reset_cutoffs`), so the built-in ones apply again.

Cut-offs are true of the prompts they were fitted under: each entry, the package's and the
user's, records its protocol (:mod:`localjudge.metrics.protocols`; an entry without one was
made before protocols were named, by protocol ``1``), and reading one whose protocol this
release does not know by name and fingerprint is a
:class:`~localjudge.errors.ProtocolError` naming both.
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
from localjudge.metrics.protocols import (
    CURRENT,
    PROTOCOLS,
    UNNAMED,
    ProtocolRef,
    check_protocol,
    current_protocol,
)

__all__ = [
    "builtin_cutoffs",
    "cutoffs_of",
    "entry_json",
    "fitted_protocols",
    "judge_cutoffs",
    "reset_cutoffs",
    "shipped",
    "shipped_judge",
    "shipped_protocol",
    "store_cutoffs",
    "user_cutoffs",
    "user_protocol",
]

#: what to do about a user's fit made under another protocol
_REFIT = (
    "remove it with `localjudge calibrate --reset` (the shipped cut-offs apply again), then "
    "fit the judge again on your labels with `localjudge calibrate`"
)
#: what to do about shipped cut-offs made under another protocol
_REINSTALL = "the package's cutoffs.json does not belong to its code: reinstall localjudge"


def judge_cutoffs(identity: JudgeIdentity, protocol: str = CURRENT) -> Cutoffs:
    """The cut-offs of the judge with ``identity`` for asks laid out by ``protocol``: the
    built-in ones, then the user's, each only where it was made under that protocol (a fit of
    another protocol's prompts says nothing of these: none, the neutral cut-offs)."""
    sha256 = identity.sha256
    shipped = (
        builtin_cutoffs(sha256) if _applies(shipped_protocol(sha256), protocol) else NO_CUTOFFS
    )
    mine = user_cutoffs(sha256) if _applies(user_protocol(sha256), protocol) else NO_CUTOFFS
    return shipped.merged(mine)


def _applies(made: ProtocolRef | None, protocol: str) -> bool:
    """Whether a fit made under ``made`` is read for a run by ``protocol``: yes when it is of
    that protocol (or there is none), and when it is of a protocol this release does not know
    by name and fingerprint (reading it refuses it, naming both); no for another known one."""
    return made is None or made.name == protocol or PROTOCOLS.get(made.name) != made.fingerprint


def shipped_protocol(sha256: str) -> ProtocolRef | None:
    """The protocol the built-in cut-offs of this judge file were built under (None: none
    ship; an entry that records none was made by protocol ``1``)."""
    entry = shipped_judge(sha256)
    if entry is None:
        return None
    return UNNAMED if entry.protocol is None else ProtocolRef(**entry.protocol.model_dump())


def fitted_protocols(identity: JudgeIdentity) -> list[str]:
    """The names of the protocols the judge with ``identity`` has fits under (built-in or the
    user's)."""
    made = {shipped_protocol(identity.sha256), user_protocol(identity.sha256)}
    return sorted({m.name for m in made if m is not None})


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
    (its ``ref``, what a run records, and its status and why); refused when the entry was
    built under a protocol that is not this release's."""
    if entry is None:
        return NO_CUTOFFS
    made = UNNAMED if entry.protocol is None else ProtocolRef(**entry.protocol.model_dump())
    check_protocol(made, f"the built-in cut-offs of {entry.alias}", hint=_REINSTALL)
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


def user_cutoffs(sha256: str, *, checked: bool = True) -> Cutoffs:
    """The cut-offs ``localjudge calibrate`` stored for this judge file (none: empty); a
    :class:`~localjudge.errors.ProtocolError` when they were fitted under a protocol that is
    not this release's (not ``checked``: read all the same)."""
    data = read_user_registry()
    if data is None:
        return NO_CUTOFFS
    where = str(user_registry_path())
    if checked and (made := _protocol(data, sha256, where)) is not None:
        what = f"the cut-offs `localjudge calibrate` stored for the judge file {sha256[:12]}"
        check_protocol(made, what, hint=_REFIT)
    return _entry(data, sha256, where)


def user_protocol(sha256: str) -> ProtocolRef | None:
    """The protocol the user's cut-offs of this judge file were fitted under (None: there are
    none; an entry that records none was made by protocol ``1``)."""
    data = read_user_registry()
    return None if data is None else _protocol(data, sha256, str(user_registry_path()))


def store_cutoffs(sha256: str, cutoffs: Cutoffs) -> None:
    """Store ``cutoffs`` for the judge file with this sha256 in the user registry (replacing
    that judge's kinds that ``cutoffs`` has, keeping its others), each with its source, under
    the current protocol (kept kinds of another protocol are refused)."""
    data = read_user_registry() or {"judges": []}
    table = dict(data.get("cutoffs") or {})
    table[sha256] = entry_json(user_cutoffs(sha256).merged(cutoffs))
    write_user_registry({**data, "cutoffs": table})


def reset_cutoffs(sha256: str, kinds: set[str] | None = None) -> list[str]:
    """Remove the user's cut-offs of this judge file (only ``kinds`` when given), so that the
    built-in ones (or the neutral ones) apply again; returns the kinds removed."""
    data = read_user_registry()
    mine = user_cutoffs(sha256, checked=False)  # a fit of another protocol is removed too
    removed = sorted(k for k in mine.kinds if kinds is None or k in kinds)
    if data is None or not removed:
        return []
    table = dict(data.get("cutoffs") or {})
    kept = mine.only(set(mine.kinds) - set(removed))
    if kept:
        table[sha256] = entry_json(kept, user_protocol(sha256))
    else:
        table.pop(sha256, None)
    write_user_registry({**data, "cutoffs": table})
    return removed


def entry_json(cutoffs: Cutoffs, protocol: ProtocolRef | None = None) -> dict[str, Any]:
    """A registry entry: the values, each kind's provenance, the combinations and the protocol
    they were fitted under (default: the current one)."""
    entry: dict[str, Any] = {
        "values": cutoffs.as_json(),
        "sources": {k: cutoffs.source(k).as_json() for k in cutoffs.kinds},
    }
    if cutoffs.combinations:
        entry["combinations"] = cutoffs.combinations_json()
    entry["protocol"] = (protocol or current_protocol()).as_json()
    return entry


def _protocol(data: Mapping[str, Any], sha256: str, where: str) -> ProtocolRef | None:
    """The protocol of the user's entry for this judge file (None: no entry)."""
    table = data.get("cutoffs") or {}
    entry = table.get(sha256) if isinstance(table, Mapping) else None
    if not isinstance(entry, Mapping):
        return None
    if "protocol" not in entry:
        return UNNAMED
    try:
        return ProtocolRef.from_json(entry["protocol"])
    except ValueError as exc:
        raise ModelError(f"{where}: cutoffs[{sha256[:12]}...]: {exc}") from exc


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
