"""The caching wrapper: a :class:`~localjudge.judge.protocol.Judge` that answers repeated calls
from the judge-call cache (:class:`~localjudge.judge.cache.database.Cache`) and stores every new one
the moment it returns, with its log entry. Keys are
:func:`~localjudge.judge.cache.rows.cache_key`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from localjudge.errors import LocalJudgeError
from localjudge.judge.cache.database import Cache
from localjudge.judge.cache.rows import CallLog, cache_key
from localjudge.judge.protocol import (
    Generation,
    Judge,
    JudgeIdentity,
    JudgeRequest,
    M,
    OnOutcome,
    Outcome,
    Prompt,
    as_messages,
    generate_many,
)
from localjudge.judge.schemas import parse_output

__all__ = ["CachingJudge"]


class CachingJudge:
    """A :class:`~localjudge.judge.protocol.Judge` that answers repeated calls from a
    :class:`Cache`.

    A hit is validated against the schema like a fresh output and returned with the stats of the
    original call and ``cached=True``; a miss calls the inner judge and stores its output. Errors
    propagate and store nothing. ``calls`` counts the inner judge's completed calls (an overflow
    refused before generating is not one), ``hits`` calls answered from the cache.

    A judge whose outputs may depend on what shares their batch (``batch_invariant`` false: a
    batched engine) gets a partly cached batch whole, so a resumed run decodes exactly the
    batches of an uninterrupted one; the cached answers are still the ones returned.
    """

    def __init__(self, inner: Judge, cache: Cache) -> None:
        self.inner = inner
        self.cache = cache
        self.calls = 0
        self.hits = 0

    def __getattr__(self, name: str) -> Any:
        """Everything else is the wrapped judge's (``engine``, ``render``, ``n_ctx``, ...)."""
        if name == "inner":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def identity(self) -> JudgeIdentity:
        return self.inner.identity

    def generate(self, prompt: Prompt, schema: type[M]) -> Generation[M]:
        key = cache_key(self.identity, as_messages(prompt), schema)
        hit = self._lookup(key, schema)
        if hit is not None:
            return hit
        generation = self.inner.generate(prompt, schema)
        self._store(key, generation, JudgeRequest(list(as_messages(prompt)), schema))
        return generation

    def generate_many(
        self, requests: Sequence[JudgeRequest], *, on_outcome: OnOutcome | None = None
    ) -> list[Outcome]:
        """Cached requests from the cache, the rest from the inner judge in one go; each new
        generation is stored the moment the inner judge reports it."""
        outcomes: list[Outcome | None] = [None] * len(requests)
        keys = [
            cache_key(
                self.identity,
                as_messages(r.messages),
                r.schema,
                r.shared_chars,
                r.read_chars,
                branch_chars=r.branch_chars,
            )
            for r in requests
        ]
        misses = []
        for i, (request, key) in enumerate(zip(requests, keys, strict=True)):
            hit = self._lookup(key, request.schema)
            if hit is None:
                misses.append(i)
            else:
                outcomes[i] = hit
                if on_outcome is not None:
                    on_outcome(i, hit)

        def done(j: int, outcome: Outcome) -> None:
            i = misses[j]
            if outcomes[i] is not None:  # a cached request decoded again with its batch
                return
            if isinstance(outcome, Generation):
                self._store(keys[i], outcome, requests[i])
            if on_outcome is not None:
                on_outcome(i, outcome)

        if (
            misses
            and len(misses) < len(requests)
            and not getattr(self.inner, "batch_invariant", True)
        ):
            misses = list(range(len(requests)))  # the batch as it was first decoded
        if misses:
            fresh = generate_many(self.inner, [requests[i] for i in misses], on_outcome=done)
            for i, outcome in zip(misses, fresh, strict=True):
                if outcomes[i] is None:
                    outcomes[i] = outcome
        return [o for o in outcomes if o is not None]

    def _lookup(self, key: str, schema: type[M]) -> Generation[M] | None:
        stored = self.cache.get(key)
        if stored is None:
            return None
        try:
            value = parse_output(schema, stored.raw)
        except LocalJudgeError:  # a row from before checksums, damaged: judge the call again
            self.cache.discard(key)
            return None
        assert isinstance(value, schema)
        self.hits += 1
        self.cache.record_hit(key)
        return Generation(
            value=value,
            raw=stored.raw,
            stats=stored.stats,
            cached=True,
            decisions=stored.decisions,
            reading=stored.reading,
        )

    def _store(self, key: str, generation: Generation[Any], request: JudgeRequest) -> None:
        self.calls += 1  # counted once a model ran: an overflow raised before generating is not
        log = CallLog.of(request, self.identity)
        self.cache.put(
            key,
            generation.raw,
            generation.stats,
            generation.decisions,
            log,
            reading=generation.reading,
        )
