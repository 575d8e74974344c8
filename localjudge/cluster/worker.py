"""The worker side of a Ray run: what runs inside each actor, and the wire format of outcomes.

:class:`JudgeActor` is Ray Data's callable class: it loads one judge per actor
(:func:`load_checked`, which refuses a model file whose sha256 differs from the driver's, naming
the worker), answers batches of requests with the batched engine, and sends each outcome back as
plain JSON (:func:`encode_outcome`), which the driver validates again (:func:`decode_outcome`).
Ray is imported only inside functions.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from localjudge.errors import (
    ContextOverflowError,
    LocalJudgeError,
    ModelError,
    OutputBudgetError,
)
from localjudge.judge.protocol import (
    Generation,
    GenerationStats,
    Judge,
    JudgeRequest,
    M,
    Outcome,
    decode_soft,
    encode_soft,
    generate_many,
)
from localjudge.judge.schemas import parse_output
from localjudge.run.settings import JudgeSettings

__all__ = [
    "JudgeActor",
    "WorkerFactory",
    "decode_outcome",
    "encode_outcome",
    "load_checked",
    "open_uncached",
    "where",
    "worker_identity",
]


#: builds the judge inside a worker actor: a picklable callable, no arguments
WorkerFactory = Callable[[], Judge]


def open_uncached(settings: JudgeSettings) -> Judge:
    """The judge ``settings`` describe, without its cache (the driver caches): what a worker
    actor runs by default."""
    from localjudge.run.settings import open_judge  # noqa: PLC0415

    return open_judge(settings, cached=False)


def where() -> str:
    """This worker, as an error names it: its hostname and Ray node id."""
    node = "?"
    try:
        import ray  # noqa: PLC0415

        node = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 (outside Ray: the hostname alone says enough)
        node = "?"
    return f"{socket.gethostname()} (node {node})"


def _model_file(judge: Judge) -> str:
    model = getattr(judge, "model", None)
    path = getattr(model, "path", None)
    return str(path) if path is not None else judge.identity.model


def load_checked(
    worker: WorkerFactory, sha256: str | None, identity: Mapping[str, Any] | None
) -> Judge:
    """Build the worker's judge and refuse it unless its model's sha256 is the driver's (and its
    identity, when given, the first worker's: another identity would judge differently)."""
    try:
        judge = worker()
    except LocalJudgeError as exc:
        raise ModelError(f"on worker {where()}: {exc.message}", hint=exc.hint) from exc
    actual = judge.identity.sha256
    if sha256 is not None and actual != sha256:
        raise ModelError(
            f"on worker {where()}: model file {_model_file(judge)} has sha256 {actual}, "
            f"the driver's has {sha256}",
            hint="install the same GGUF file on every node (same path or registered alias)",
        )
    if identity is not None and judge.identity.as_dict() != dict(identity):
        mine = judge.identity.as_dict()
        differs = sorted(
            {k for k in mine if mine[k] != identity.get(k)}
            | {
                f"settings.{k}"
                for k in set(mine["settings"]) | set(identity.get("settings", {}))
                if mine["settings"].get(k) != identity.get("settings", {}).get(k)
            }
            - {"settings"}
        )
        raise ModelError(
            f"on worker {where()}: the judge's identity differs from the first worker's "
            f"({', '.join(differs)}), so its outputs could differ",
            hint="run the cluster's workers on the same llama.cpp build and hardware kind",
        )
    return judge


def encode_outcome(outcome: Outcome) -> str:
    """An outcome as plain JSON text: what travels back to the driver."""
    if isinstance(outcome, ContextOverflowError):
        return json.dumps(
            {
                "overflow": {
                    "kind": outcome.kind,
                    "message": outcome.message,
                    "needed": outcome.needed,
                    "available": outcome.available,
                    "field": outcome.field,
                    "hint": outcome.hint,
                }
            }
        )
    s = outcome.stats
    return json.dumps(
        {
            "raw": outcome.raw,
            "stats": [s.prompt_tokens, s.evaluated_prompt_tokens, s.completion_tokens, s.seconds],
            "decisions": encode_soft(outcome.decisions, outcome.reading),
        }
    )


def decode_outcome(text: str, schema: type[M]) -> Generation[M] | ContextOverflowError:
    """An outcome from its JSON text, the value validated again against ``schema``."""
    data = json.loads(text)
    if "overflow" in data:
        o = data["overflow"]
        cls = OutputBudgetError if o["kind"] == OutputBudgetError.kind else ContextOverflowError
        return cls(
            o["message"],
            needed=o["needed"],
            available=o["available"],
            field=o["field"],
            hint=o["hint"],
        )
    prompt, evaluated, completion, seconds = data["stats"]
    value = parse_output(schema, data["raw"])
    assert isinstance(value, schema)
    decisions, reading = decode_soft(data["decisions"])
    return Generation(
        value=value,
        raw=data["raw"],
        stats=GenerationStats(prompt, evaluated, completion, seconds),
        decisions=decisions,
        reading=reading,
    )


class JudgeActor:
    """Ray Data's callable class: one loaded judge per actor, answering batches of requests.

    A batch is ``{"i": positions, "messages": JSON texts, "schema": indices into schemas,
    "shared": each request's shared_chars, "read": each request's read_chars as JSON,
    "branches": each request's branch_chars as JSON}``
    and comes back as ``{"i": positions, "outcome": JSON texts}``."""

    def __init__(
        self,
        worker: WorkerFactory,
        sha256: str | None,
        identity: Mapping[str, Any] | None,
        schemas: Sequence[bytes],
    ) -> None:
        from ray import cloudpickle  # noqa: PLC0415

        self.judge = load_checked(worker, sha256, identity)
        self.schemas: list[type[BaseModel]] = [cloudpickle.loads(s) for s in schemas]

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        requests = [
            JudgeRequest(
                json.loads(m),
                self.schemas[int(s)],
                shared_chars=int(k),
                read_chars=_span(r),
                branch_chars=tuple(int(c) for c in json.loads(b)),
            )
            for m, s, k, r, b in zip(
                batch["messages"],
                batch["schema"],
                batch["shared"],
                batch["read"],
                batch["branches"],
                strict=True,
            )
        ]
        outcomes = generate_many(self.judge, requests)
        return {
            "i": [int(i) for i in batch["i"]],
            "outcome": [encode_outcome(o) for o in outcomes],
        }


def _span(text: str) -> tuple[int, int] | None:
    """A request's ``read_chars`` from the JSON the driver sent."""
    span = json.loads(text)
    return None if span is None else (int(span[0]), int(span[1]))


def worker_identity(worker: WorkerFactory, sha256: str | None) -> dict[str, Any]:
    """On one worker: its judge's identity (what every actor must then match)."""
    return load_checked(worker, sha256, None).identity.as_dict()
