"""Protocols: the prompts and layout of every kind of decision, named, with a fingerprint.

A protocol is what the metrics ask the judge: each kind of decision's instructions, the layout
of its user message (the shared opening, the span read), its output schema, and the baseline,
generated and reason calls around the decisions. Judged rows, the cut-offs fitted on them, a
user's ``calibrate`` fit and the cached calls are only true of the protocol that made them, so
each records its name and fingerprint (:class:`ProtocolRef`), and reading one whose fingerprint
is not this release's fails at once (:func:`check_protocol`), naming both protocols.

The fingerprint (:func:`fingerprint`) is the sha256 of the canonical JSON of the asks the
metrics make for one fixed item (:data:`REFERENCE_ITEM`), grouped by what they ask
(:func:`reference_asks`): a pure function of the code, no model. :data:`PROTOCOLS` holds each
protocol's committed fingerprint; ``tests/unit/test_protocols.py`` recomputes the current one
and fails when a prompt changes but the protocol does not. A new layout is a new protocol,
never an edit of one whose rows and fits exist.

Protocol ``"1"``: the layout of :mod:`localjudge.metrics.instructions` as the releases up to
issue 66 shipped it, one decision per call. Everything stored before protocols were named was
made under it (:data:`UNNAMED`). Protocol ``"2"``: :mod:`localjudge.metrics.branched`, each
passage read once and every decision about it continuing from that reading. The metrics ask
by :data:`CURRENT` unless a run names another (``--protocol``, ``MetricSettings.protocol``):
every bundled judge's fits are protocol 1's until protocol 2's are built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from localjudge.canonical import canonical_json, sha256_text
from localjudge.data.item import make_item
from localjudge.errors import ProtocolError
from localjudge.judge.schemas import json_schema
from localjudge.metrics.asks import Answer, Ask, reason_request
from localjudge.metrics.base import DEFAULT_PROTOCOL, PROTOCOL_NAMES, Metric
from localjudge.metrics.position import ContextPosition
from localjudge.metrics.recall import ContextRecall
from localjudge.metrics.relevance import ContextRelevance

__all__ = [
    "CURRENT",
    "PROTOCOLS",
    "REFERENCE_ITEM",
    "UNNAMED",
    "ProtocolRef",
    "check_protocol",
    "current_protocol",
    "fingerprint",
    "protocol_ref",
    "reference_asks",
]

#: every protocol this release knows, by name: its committed fingerprint
PROTOCOLS: Mapping[str, str] = {
    "1": "070793edd4bf0881936344426b681676fa4a7fc7a79b633802fe7df76946a6f4",
    "2": "b305b8ed460c01ab5ee34e89456a15d315048d7937ae17c4833e1d11f6de82e9",
    "3": "4359890ebd294c025d6a130850a41231e0dfbbb5bb356d0396a482581db6529e",
}
assert tuple(PROTOCOLS) == PROTOCOL_NAMES
#: the protocol the metrics lay their asks out by unless a run names another
CURRENT = DEFAULT_PROTOCOL

#: the fixed item every protocol is fingerprinted on: a question, two passages (one answers
#: it), a reference of two statements and a response
REFERENCE_ITEM: Mapping[str, Any] = {
    "id": "reference",
    "user_input": "What is the capital of France?",
    "retrieved_contexts": [
        "Paris is the capital and largest city of France.",
        "The Loire is the longest river in France.",
    ],
    "reference": "Paris is the capital of France. It lies on the Seine.",
    "response": "The capital of France is Paris.",
}


@dataclass(frozen=True)
class ProtocolRef:
    """A protocol as what it made records it: its ``name`` and its ``fingerprint`` (sha256)."""

    name: str
    fingerprint: str

    def __str__(self) -> str:
        return f"protocol {self.name} ({self.fingerprint[:12]})"

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "fingerprint": self.fingerprint}

    @classmethod
    def from_json(cls, data: Any) -> ProtocolRef:
        """Read a recorded protocol, ``{"name": ..., "fingerprint": 64 hex digits}``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a protocol must be an object, got {data!r}")
        name, digest = data.get("name"), data.get("fingerprint")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a protocol needs a 'name', got {data!r}")
        if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise ValueError(f"a protocol's 'fingerprint' must be 64 hex digits, got {data!r}")
        return cls(name, digest)


#: what made everything stored before protocols were named (an entry that records none)
UNNAMED = ProtocolRef("1", PROTOCOLS["1"])


def current_protocol() -> ProtocolRef:
    """The protocol this release's metrics ask by unless told, with its committed fingerprint."""
    return ProtocolRef(CURRENT, PROTOCOLS[CURRENT])


def protocol_ref(name: str) -> ProtocolRef:
    """The protocol ``name`` of this release (:data:`PROTOCOLS`), with its fingerprint."""
    return ProtocolRef(name, PROTOCOLS[name])


def check_protocol(stored: ProtocolRef, what: str, *, hint: str) -> None:
    """Nothing when ``stored`` is a protocol this release knows, by name and fingerprint;
    otherwise a :class:`~localjudge.errors.ProtocolError` that names ``what`` (``"the rows of
    X"``) and both protocols: the one it was made under and this release's."""
    known = PROTOCOLS.get(stored.name)
    if known == stored.fingerprint:
        return
    if known is None:
        raise ProtocolError(
            f"{what} were made under {stored}, which this release does not know; it asks by "
            f"{current_protocol()}",
            hint=hint,
        )
    raise ProtocolError(
        f"{what} were made under {stored}, but this release's is "
        f"{ProtocolRef(stored.name, known)}: the prompts differ",
        hint=hint,
    )


# --------------------------------------------------------------------------- the fingerprint


def _variants(name: str) -> list[tuple[Metric, dict[str, Any]]]:
    """Each metric of protocol ``name`` on the reference item; position also without an
    EXPECTED ANSWER (its ``position.relevant`` kind) and, from protocol 2 on, with a response
    and no reference (another ending). Reasons on: protocol 2 marks each explained decision's
    end for its reason (protocol 1's asks are the same either way)."""
    alone = {k: REFERENCE_ITEM[k] for k in ("id", "user_input", "retrieved_contexts")}
    whole = dict(REFERENCE_ITEM)
    out: list[tuple[Metric, dict[str, Any]]] = [
        (ContextPosition(reasons=True, protocol=name), alone),
        (ContextPosition(reasons=True, protocol=name), whole),
        (ContextRelevance(reasons=True, protocol=name), whole),
        (ContextRecall(reasons=True, protocol=name), whole),
    ]
    if name != "1":
        answered = {k: v for k, v in whole.items() if k != "reference"}
        out.insert(2, (ContextPosition(reasons=True, protocol=name), answered))
    return out


def _rendered(ask: Ask) -> dict[str, Any]:
    """What of an ask reaches the judge or decides whether it is asked: the messages, the
    output schema as the grammar gets it, the shared opening and the span read, the decision
    and whether a reason is asked for it."""
    request = ask.request
    decision = ask.decision
    rendered = {
        "at": ask.at,
        "baseline": ask.baseline,
        "explain": ask.explain,
        "decision": None if decision is None else [decision.key, list(decision.values)],
        "messages": [dict(m) for m in request.messages],
        "schema": json_schema(request.schema),
        "shared_chars": request.shared_chars,
        "read_chars": None if request.read_chars is None else list(request.read_chars),
    }
    if request.branch_chars:  # protocol 1 marks none: its fingerprint is what it was
        rendered["branch_chars"] = list(request.branch_chars)
    return rendered


def reference_asks(name: str = CURRENT) -> dict[str, list[dict[str, Any]]]:
    """The asks of protocol ``name`` for :data:`REFERENCE_ITEM`, rendered (:func:`_rendered`),
    grouped by what they ask (a kind of decision, ``baseline``, a generated output's schema
    name, and ``reason``: each decision's reason call, for a verdict of its first value)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for metric, record in _variants(name):
        built = metric.build(make_item(record, index=0))
        assert isinstance(built, list)
        for ask in built:
            out.setdefault(ask.key.what, []).append(_rendered(ask))
            if ask.decision is not None and ask.explain and not ask.baseline:
                reason = Ask(reason_request(ask, Answer(ask.decision.values[0])), None, ask.at)
                out.setdefault("reason", []).append(_rendered(reason))
    return out


def fingerprint(name: str = CURRENT) -> str:
    """Protocol ``name``'s fingerprint: the sha256 of :func:`reference_asks` in canonical JSON.
    A pure function of the code (``PROTOCOLS[name]`` is what it must give)."""
    return sha256_text(canonical_json(reference_asks(name)))
