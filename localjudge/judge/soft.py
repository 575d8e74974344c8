"""Soft verdicts: which keys of an output schema are decisions (:func:`decision_keys`), and, for
one request, the probability of every allowed value of each decision, read from the logits the
engine computed anyway (:class:`Decisions`).

A decision opens where its key's value starts and stays open while two values or more can still
be spelled. At each of its steps the mass of a softmax over the tokens the grammar allows goes
to the one value a token's bytes can still spell; a token that leaves the value open carries
its mass on to the next position along the greedy path.

numpy and :mod:`localjudge.judge.protocol` only: no llama.cpp, no grammar (the engine hands in
the output so far, the logits and the allowed tokens). At the top of :mod:`localjudge.judge`:
any layer may use it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from localjudge.judge.protocol import SoftDecision


def decision_keys(schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The keys of a JSON schema whose value is a choice (boolean, enum, literals of two or more
    values), with the JSON text of each value. Constants (``index``) are forced, not decided."""
    defs = schema.get("$defs", {})
    found: dict[str, tuple[str, ...]] = {}

    def values_of(node: Mapping[str, Any]) -> tuple[str, ...] | None:
        if "$ref" in node:
            return values_of(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "enum" in node:
            return tuple(json.dumps(v, separators=(",", ":")) for v in node["enum"])
        if node.get("type") == "boolean":
            return ("true", "false")
        return None

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, sub in (node.get("properties") or {}).items():
                values = values_of(sub)
                if values is not None and len(values) >= 2:
                    if found.get(key, values) != values:
                        raise ValueError(f"decision key {key!r} has two sets of values")
                    found[key] = values
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found


class _Open:
    """A decision being made: probability mass gathered per value along the greedy path."""

    def __init__(self, key: str, start: int, values: tuple[str, ...]) -> None:
        self.key, self.start = key, start
        self.values = [v.encode() for v in values]
        self.weight = 1.0
        self.mass = dict.fromkeys(self.values, 0.0)

    def fits(self, text: bytes) -> list[bytes]:
        return [v for v in self.values if v.startswith(text) or text.startswith(v)]


class Decisions:
    """One request's decisions: the one open now, where each closed one began, and what each
    gave."""

    def __init__(self, keys: Mapping[str, tuple[str, ...]] | None = None) -> None:
        #: decision keys and the JSON texts of their values (``EngineRequest.decisions``)
        self.keys: Mapping[str, tuple[str, ...]] = keys if keys is not None else {}
        self.current: _Open | None = None
        self.decided: set[int] = set()
        self.made: list[SoftDecision] = []

    def find(self, out: bytes | bytearray) -> _Open | None:
        """The decision the next token belongs to, if a key's value is still open in ``out``
        (the output so far)."""
        if self.current is not None:
            return self.current
        out = bytes(out)
        for key, values in self.keys.items():
            mark = b'"' + key.encode() + b'":'
            at = out.rfind(mark)
            if at < 0 or at in self.decided:
                continue
            start = at + len(mark)
            d = _Open(key, start, values)
            if len([v for v in d.values if v.startswith(out[start:])]) >= 2:
                self.current = d
                return d
        return None

    def weigh(
        self,
        d: _Open,
        out: bytes | bytearray,
        logits: np.ndarray,
        allowed: np.ndarray,
        *,
        chosen: int,
        spell: Callable[[int], bytes],
    ) -> None:
        """Share this step's probability among ``d``'s values: ``allowed`` are the tokens the
        grammar allows, ``chosen`` the greedy one, ``spell`` a token's bytes."""
        so_far = bytes(out[d.start :])
        z = logits[allowed].astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        carried = 0.0
        for token, pt in zip(allowed.tolist(), p.tolist(), strict=True):
            fits = d.fits(so_far + spell(token))
            if len(fits) == 1:
                d.mass[fits[0]] += d.weight * pt
            elif token == chosen:
                carried = pt  # the value stays open along the greedy path
        d.weight *= carried

    def close(self, out: bytes | bytearray) -> None:
        """Record the open decision once ``out`` has settled its value."""
        d = self.current
        if d is None:
            return
        so_far = bytes(out[d.start :])
        if len([v for v in d.values if v.startswith(so_far)]) >= 2:
            return
        chosen = next(v for v in d.values if so_far.startswith(v) or v.startswith(so_far))
        total = sum(d.mass.values()) or 1.0
        self.made.append(
            SoftDecision(
                key=d.key,
                probs={v.decode(): m / total for v, m in d.mass.items()},
                chosen=chosen.decode(),
            )
        )
        self.decided.add(d.start - len(d.key) - 3)
        self.current = None
