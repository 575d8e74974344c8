"""Where a judge's cut-offs live: the registries, keyed by the judge file's sha256.

Both the package's ``registry.json`` and the user registry (``models.json``) may hold a
``"cutoffs"`` object: ``{sha256: {"values": {kind: number or [numbers]}, "source": "..."}}``.
The built-in entries are fitted on the development sets by ``benchmarks/fit_cutoffs.py``; the
user's come from ``localjudge calibrate`` and replace the built-in ones kind by kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from localjudge.errors import ModelError
from localjudge.judge.cutoffs import NO_CUTOFFS, Cutoffs
from localjudge.judge.protocol import JudgeIdentity
from localjudge.judge.registry import read_user_registry, user_registry_path

__all__ = ["builtin_cutoffs", "judge_cutoffs", "store_cutoffs", "user_cutoffs"]


def judge_cutoffs(identity: JudgeIdentity) -> Cutoffs:
    """The cut-offs of the judge with ``identity``: the built-in ones, then the user's."""
    return builtin_cutoffs(identity.sha256).merged(user_cutoffs(identity.sha256))


@lru_cache(maxsize=8)
def builtin_cutoffs(sha256: str) -> Cutoffs:
    """The cut-offs the package ships for the judge file with this sha256 (none: empty); read
    once per process (package data does not change under it)."""
    text = resources.files("localjudge.judge").joinpath("registry.json").read_text("utf-8")
    return _entry(json.loads(text), sha256, "built-in registry")


def user_cutoffs(sha256: str) -> Cutoffs:
    """The cut-offs ``localjudge calibrate`` stored for this judge file (none: empty)."""
    data = read_user_registry()
    return _entry(data, sha256, str(user_registry_path())) if data is not None else NO_CUTOFFS


def store_cutoffs(sha256: str, cutoffs: Cutoffs) -> None:
    """Store ``cutoffs`` for the judge file with this sha256 in the user registry (replacing
    that judge's kinds that ``cutoffs`` has, keeping its others)."""
    from localjudge.judge.registry_edit import write_user_registry  # noqa: PLC0415

    data = read_user_registry() or {"judges": []}
    table = dict(data.get("cutoffs") or {})
    merged = user_cutoffs(sha256).merged(cutoffs)
    table[sha256] = {"values": merged.as_json(), "source": cutoffs.source}
    write_user_registry({**data, "cutoffs": table})


def _entry(data: Mapping[str, Any], sha256: str, where: str) -> Cutoffs:
    table = data.get("cutoffs") or {}
    entry = table.get(sha256) if isinstance(table, Mapping) else None
    if entry is None:
        return NO_CUTOFFS
    if not isinstance(entry, Mapping) or not isinstance(entry.get("values"), Mapping):
        raise ModelError(f"{where}: cutoffs[{sha256[:12]}...] needs a 'values' object")
    try:
        return Cutoffs.from_json(entry["values"], str(entry.get("source", where)))
    except ValueError as exc:
        raise ModelError(f"{where}: {exc}") from exc
