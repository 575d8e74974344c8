"""What the bundled judges ship: per judge and kind of decision, the cut-offs and the
combination of readings, whether they are fitted, neutral or an exception, and one line of why.

The package data ``localjudge/judge/models/cutoffs.json`` holds a :class:`Shipped`;
``fitting/build.py`` writes it whole, never patches it, with its evidence in
``fitting/evidence.json`` (per source figures with intervals, what the rule decided and why:
read by the build and the docs, never at run time, so it is not package data), and
``build.py --check`` fails when either differs from what the build makes. The registry of the
judge files themselves (``registry.json``) holds no cut-off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SHIPPED_PATH",
    "Shipped",
    "ShippedJudge",
    "ShippedKind",
    "ShippedProtocol",
    "dump",
    "read_shipped",
]

_MODELS = Path(__file__).resolve().parents[1] / "judge" / "models"
#: what ships (package data)
SHIPPED_PATH = _MODELS / "cutoffs.json"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShippedCombination(_Frozen):
    weights: dict[str, float]
    intercepts: list[float]


class ShippedKind(_Frozen):
    """One kind of decision of one judge: ``fitted`` (the rule shipped it), ``neutral`` (the
    rule refused the fit: the larger probability decides) or ``exception`` (the rule refused
    it and ``fitting/exceptions.json`` ships it, with its reason)."""

    status: Literal["fitted", "neutral", "exception"]
    cutoffs: list[float] | None = None
    combination: ShippedCombination | None = None
    #: the short reference a run records as the kind's ``cutoffs_source``
    #: (``origin:file@sha256[:12]``; None for a neutral kind)
    ref: str | None = None
    why: str = Field(min_length=1)


class ShippedProtocol(_Frozen):
    """The protocol (:mod:`localjudge.metrics.protocols`) the rows an entry was built from were
    judged under: its name and fingerprint."""

    name: str = Field(min_length=1)
    fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$")


class ShippedJudge(_Frozen):
    """A judge by its alias and file sha256; ``built`` says what made its entry, ``protocol``
    the prompts its rows were judged under (None: an entry built before protocols were named,
    which protocol ``1`` made)."""

    alias: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    protocol: ShippedProtocol | None = None
    built: str
    kinds: dict[str, ShippedKind]


class Shipped(_Frozen):
    format: Literal[2] = 2
    judges: list[ShippedJudge]

    def judge(self, sha256: str) -> ShippedJudge | None:
        return next((j for j in self.judges if j.sha256 == sha256), None)


def read_shipped(path: Path = SHIPPED_PATH) -> Shipped:
    return Shipped.model_validate_json(path.read_text("utf-8"))


def dump(data: Any) -> str:
    """The committed files' text: indented JSON, keys in order, one trailing newline."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"
