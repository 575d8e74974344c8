"""The judge engine: many requests decoded together in one llama.cpp context, each under its own
llguidance grammar, sampling only what the grammar leaves open.

How it works (llama-cpp-python's low-level bindings; llama.cpp's ``examples/parallel`` and its
server's slots follow the same pattern):

- **One context, many sequences.** ``parallel`` slots plus a *holder* sequence that holds the shared
  instruction prefix (the prompt's fixed part), evaluated once, alone, or read from the prefix store
  (:mod:`localjudge.judge.engine.prefix_file`), where the next process finds it. A finished slot
  keeps its prompt's cells and is refilled with the next request (continuous batching).
- **Every prompt token read once.** A request starts from the longest prefix any sequence
  holds (its own slot, another slot, the holder): copied (``llama_memory_seq_cp``) and trimmed
  to the reused length. A prompt is evaluated in decode calls cut at fixed points: the end of
  the instructions, the end of the item's shared part (its question and contexts, which the
  item's other metrics reuse) or, for a prompt that marks none, every
  :data:`~localjudge.judge.engine.values.GRID` tokens; and a prefix is reused only up to a
  point where both its evaluation and the request's are cut. So the reused cells are exactly
  the ones the request would compute itself, and outputs do not depend on what was reused.
  The item's shared part is evaluated when its first request starts, so a request started
  next to it copies it. A sequence whose first cells a sliding window dropped is never reused
  (the holder never generates, so its prefix stays whole; the context keeps a full-size SWA
  cache besides).
- **Branch points.** A request may mark openings that other requests continue from
  (``EngineRequest.branches``: an item's shared text, then one passage). The state at each
  is kept in host memory as llama.cpp serialises a sequence (at most
  :data:`~localjudge.judge.engine.branches.KEEP_BYTES`, the least recently used going first) and
  read back into the slot of any later request that begins with it, whatever ran in between:
  each opening is evaluated once, in any request order and with any ``parallel``. A request
  that marks none keeps nothing and runs as before.
- **One decode per step** for the live sequences, logits only for each sequence's last token,
  read in place from llama.cpp's buffer (a numpy view, no copy).
- **Grammar cost near zero.** One ``LLMatcher`` per sequence. The greedy argmax is tried first
  and the full mask is computed only when the argmax is rejected, when bytes are forced, or at a
  decision point. Tokens the grammar forces are appended without sampling and evaluated in the
  next step (``fast_forward``). Generation stops the moment the grammar is complete. Any matcher
  error, a rejected token or an output past the schema's bound raises: nothing unconstrained is
  ever returned.
- **Determinism.** Each sequence has its own KV stream (``kv_unified`` off), a new prompt is
  decoded in a call of its own, and generated tokens are grouped by chunk length into calls of
  fewer than eight rows, so a sequence's tokens land in ubatches of the same shape as when it
  runs alone. With kernels that do not switch on batch shape (SmolLM2's Q4_1 on CPU, measured
  bit-identical) a request's output is then independent of what shares its batches. Everywhere
  else the engine is still a pure function of its ordered request list: there is no timing in
  it.
- **Soft verdicts.** At each decision (the value of a boolean or enum key), the probability of
  every allowed value is read from the logits the step computed anyway: a softmax over the
  tokens the grammar allows, a token's mass going to the one value its bytes can still spell
  (a token that leaves the value open carries the mass on to the next position).

This module keeps the decode loop: the slots, the grammar steps, the schedule of decode calls.
The rest lives by responsibility in :mod:`~localjudge.judge.engine.kv` (the context and what its
sequences hold), :mod:`~localjudge.judge.soft` (soft verdicts),
:mod:`~localjudge.judge.engine.values` (requests, outputs, counters) and
:mod:`~localjudge.judge.engine.log` (llama.cpp's log and a Ctrl-C inside it). Imports those,
the prefix store's type, numpy and :mod:`localjudge.errors`; ``llama_cpp`` and ``llguidance``
only inside :class:`Engine`, when a judge is loaded.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from localjudge.errors import ConstraintError, LocalJudgeError
from localjudge.judge.engine.kv import KVCache
from localjudge.judge.engine.prefix_file import PrefixStore
from localjudge.judge.engine.values import N_UBATCH, EngineOutput, EngineRequest, EngineStats
from localjudge.judge.soft import Decisions

__all__ = ["DEFAULT_PARALLEL", "Engine", "EngineOutput", "EngineRequest", "EngineStats"]

#: requests decoded together by default (benchmarks/README.md, "engine": on a 2-core CPU more
#: requests at once do not decode faster)
DEFAULT_PARALLEL = 1
#: rows per decode call stay below this: CPU matmul kernels switch paths at 8 rows (K-quants'
#: tiled kernel), and a sequence alone never reaches it with one generated token
ROW_CAP = 8


@dataclass
class _Slot:
    seq: int
    index: int = -1
    request: EngineRequest | None = None
    matcher: Any = None
    pos: int = 0
    pending: list[int] = field(default_factory=list)
    prefilled: bool = False
    out: bytearray = field(default_factory=bytearray)
    n_out: int = 0
    sampled: int = 0
    forced: int = 0
    #: the time spent on this request: its start (the prompt evaluated there, shared part
    #: included), its share of each decode call by tokens, its grammar steps
    seconds: float = 0.0
    decisions: Decisions = field(default_factory=Decisions)
    #: prompt tokens evaluated for this request (its instructions' too, when it needed them)
    cost: int = 0
    truncated: bool = False
    #: the reading of the request's ``read`` span (sum of log-probabilities, tokens)
    reading: tuple[float, int] | None = None


class Engine:
    """Continuous-batching greedy decoding under per-request grammars, on a loaded model."""

    def __init__(
        self,
        model: Any,
        lltokenizer: Any,
        *,
        parallel: int = 1,
        n_ctx: int = 8192,
        n_threads: int = 1,
        fast_forward: bool = True,
        flash_attn: str = "off",
        prefix_store: PrefixStore | None = None,
    ) -> None:
        import llama_cpp  # noqa: PLC0415 (the llama backend's own import)
        import llguidance  # noqa: PLC0415
        import llguidance.numpy  # noqa: PLC0415

        if parallel < 1:
            raise ValueError("parallel must be at least 1")
        self._llg = llguidance
        self.tokenizer = lltokenizer
        vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        self.eos = int(llama_cpp.llama_vocab_eos(vocab))
        self.parallel = parallel
        self.fast_forward = fast_forward
        self.stats = EngineStats()
        self._bitmask = llguidance.numpy.allocate_token_bitmask(1, lltokenizer.vocab_size)
        self._bytes_of: dict[int, bytes] = {}
        #: the context, and what its sequences hold for reuse
        self.kv = KVCache(
            llama_cpp,
            model,
            parallel=parallel,
            max_ctx=n_ctx,
            n_threads=n_threads,
            flash_attn=flash_attn,
            n_vocab=self.n_vocab,
            stats=self.stats,
            prefix_store=prefix_store,
        )

    @property
    def max_ctx(self) -> int:
        """The largest per-sequence window a context is made with."""
        return self.kv.max_ctx

    @property
    def n_threads(self) -> int:
        """The threads each decode call runs on."""
        return self.kv.n_threads

    @property
    def flash_attn(self) -> int:
        """The attention kernel the context is made with (llama.cpp's flash-attention type)."""
        return self.kv.flash_attn

    def close(self) -> None:
        """Free the context (a later run makes a new one)."""
        self.kv.close()

    # ------------------------------------------------------------------ decoding

    def _start(self, slot: _Slot, index: int, request: EngineRequest) -> None:
        """Give ``slot`` the longest prefix some sequence holds (the instructions at least,
        from the holder), evaluate the prompt up to its last cut point (the item's shared part:
        a request started after it copies it), and leave the rest to the decode loop."""
        started = time.perf_counter()
        prepared = self.kv.prepare(slot.seq, request)
        target, slot.cost, slot.reading = prepared.target, prepared.cost, prepared.reading
        matcher = self._llg.LLMatcher(self.tokenizer, request.grammar, log_level=0)
        if matcher.is_error():
            raise ConstraintError(f"the output grammar is invalid: {matcher.get_error()}")
        slot.index, slot.request, slot.matcher = index, request, matcher
        slot.pos = target
        slot.pending = list(request.tokens[target:])
        slot.prefilled = False
        slot.out, slot.n_out, slot.sampled, slot.forced = bytearray(), 0, 0, 0
        slot.truncated = False
        slot.decisions = Decisions(request.decisions)
        if self.fast_forward:  # the forced opening ('{"verdicts":[{"index":0,"reason":"')
            self._push_forced(slot)
        slot.seconds = time.perf_counter() - started

    def _bytes(self, token: int) -> bytes:
        b = self._bytes_of.get(token)
        if b is None:
            b = self._bytes_of[token] = bytes(self.tokenizer.decode_bytes([token]))
        return b

    def _append(self, slot: _Slot, token: int) -> None:
        assert slot.request is not None
        slot.out += self._bytes(token)
        slot.n_out += 1
        if slot.request.budgeted and slot.n_out >= slot.request.max_tokens:
            slot.truncated = not slot.matcher.is_stopped()
        elif slot.n_out > slot.request.max_tokens:
            raise ConstraintError(
                f"output exceeds the schema's bound of {slot.request.max_tokens} tokens",
                hint="this is a bug in the schema bound; please report it",
            )

    def _push_forced(self, slot: _Slot) -> None:
        forced = slot.matcher.compute_ff_tokens()
        if not forced:
            return
        assert slot.request is not None
        if slot.request.budgeted:  # never past the budget, even with forced tokens
            forced = forced[: max(slot.request.max_tokens - slot.n_out, 0)]
        if not slot.matcher.consume_tokens(forced):
            raise _grammar_failure(slot.matcher, "forced tokens were rejected")
        for token in forced:
            self._append(slot, token)
        slot.pending.extend(forced)
        slot.forced += len(forced)

    def _allowed(self, matcher: Any) -> np.ndarray:
        self._llg.numpy.fill_next_token_bitmask(matcher, self._bitmask, 0)
        if matcher.is_error():
            raise _grammar_failure(matcher, "computing the token mask failed")
        bits = np.unpackbits(self._bitmask[0].view(np.uint8), bitorder="little")
        allowed = np.flatnonzero(bits[: self.n_vocab])
        if allowed.size == 0:
            raise _grammar_failure(matcher, "the grammar allows no token")
        return allowed

    def _choose(self, slot: _Slot, logits: np.ndarray) -> int:
        """The greedy token under the grammar. The argmax is checked first; the full mask only
        when it is rejected, where bytes are forced (the mask is narrower than byte validity
        there: it keeps the grammar's own tokenization), or inside a decision."""
        m = slot.matcher
        decision = slot.decisions.find(slot.out)
        best = int(np.argmax(logits))
        if decision is None and not m.compute_ff_bytes() and m.validate_tokens([best]) == 1:
            self.stats.argmax_accepted += 1
            return best
        allowed = self._allowed(m)
        self.stats.full_masks += 1
        best = int(allowed[np.argmax(logits[allowed])])  # the first maximum, as greedy takes
        if decision is not None:
            slot.decisions.weigh(
                decision, slot.out, logits, allowed, chosen=best, spell=self._bytes
            )
        return best

    def _advance(self, slot: _Slot, logits: np.ndarray) -> bool:
        """Choose, consume and fast-forward one step; True when the request is complete."""
        m = slot.matcher
        if slot.truncated:  # the budget ran out on forced tokens
            return True
        token = self._choose(slot, logits)
        slot.sampled += 1
        if token == self.eos:
            if not m.is_accepting():
                raise _grammar_failure(m, "end of sequence before the output was complete")
            return True
        if not m.consume_token(token):
            raise _grammar_failure(m, f"token {token} was rejected")
        self._append(slot, token)
        slot.pending = [token]
        slot.decisions.close(slot.out)
        if m.is_error():  # is_stopped() is true on an error too: test the error first
            raise _grammar_failure(m, "the matcher failed")
        if m.is_stopped() or slot.truncated:
            return True
        if self.fast_forward:
            self._push_forced(slot)
            slot.decisions.close(slot.out)
            if m.is_error():
                raise _grammar_failure(m, "the matcher failed")
            if m.is_stopped() or slot.truncated:
                return True
        return False

    # ------------------------------------------------------------------ the loop

    def _groups(self, live: list[_Slot]) -> list[list[_Slot]]:
        """This step's decode calls: a new prompt alone; generated chunks grouped by length,
        fewer than :data:`ROW_CAP` rows a call (ubatch shapes a sequence would get alone)."""
        groups = [[s] for s in live if not s.prefilled]
        by_length: dict[int, list[_Slot]] = {}
        for s in live:
            if s.prefilled and s.pending:
                by_length.setdefault(len(s.pending), []).append(s)
        for length, members in sorted(by_length.items()):
            cap = max(1, (ROW_CAP - 1) // length) if length < ROW_CAP else 1
            groups += [members[i : i + cap] for i in range(0, len(members), cap)]
        return groups

    def run(
        self,
        requests: Sequence[EngineRequest],
        on_done: Callable[[int, EngineOutput], None] | None = None,
    ) -> list[EngineOutput]:
        """Decode every request; outputs in request order. ``on_done`` sees each output as soon
        as it is complete. Every request must fit the per-sequence window (checked by the caller
        against the judge's ``n_ctx``)."""
        if not requests:
            return []
        self.kv.ensure_context(max(len(r.tokens) + r.max_tokens for r in requests))
        queue = deque(enumerate(requests))
        slots = [_Slot(seq=i) for i in range(self.parallel)]
        outputs: list[EngineOutput | None] = [None] * len(requests)
        try:
            while queue or any(s.request is not None for s in slots):
                for s in slots:
                    if s.request is None and queue:
                        with _guarded():
                            self._start(s, *queue.popleft())
                live = [s for s in slots if s.request is not None]
                for group in self._groups(live):
                    self._step(group, outputs, on_done)
        finally:
            for s in slots:  # an interrupted run leaves no sequence behind
                if s.request is not None:
                    self.kv.drop(s.seq)
                    s.request = None
        assert all(o is not None for o in outputs)
        return outputs  # type: ignore[return-value]

    def _step(
        self,
        group: list[_Slot],
        outputs: list[EngineOutput | None],
        on_done: Callable[[int, EngineOutput], None] | None,
    ) -> None:
        """Submit the group's pending tokens (a long prompt in ubatch-sized cuts) and advance
        every sequence whose last pending token got logits."""
        entries: list[tuple[int, int, int, bool]] = []
        reads: list[tuple[_Slot, int]] = []
        shares: list[tuple[_Slot, int]] = []
        prompt = any(not s.prefilled for s in group)
        for s in group:
            assert s.request is not None
            take = s.pending[: N_UBATCH if not s.prefilled else len(s.pending)]
            if not s.prefilled:
                self.stats.prompt_tokens_evaluated += min(
                    len(take), max(0, len(s.request.tokens) - s.pos)
                )
            last = len(take) == len(s.pending)
            for k, token in enumerate(take):
                entries.append((token, s.pos + k, s.seq, last and k == len(take) - 1))
            if last:
                reads.append((s, len(entries) - 1))
                s.prefilled = True
            s.pos += len(take)
            s.pending = s.pending[len(take) :]
            shares.append((s, len(take)))
        if not entries:
            return
        start = time.perf_counter()
        self.kv.decode(entries, prompt=prompt)
        decoded = time.perf_counter()
        for s, n in shares:  # a decode call's time, split by the tokens each request put in
            s.seconds += (decoded - start) * n / len(entries)
        start = decoded
        for s, i in reads:
            began = time.perf_counter()
            with _guarded():
                finished = self._advance(s, self.kv.logits(i))
            s.seconds += time.perf_counter() - began
            if finished:
                outputs[s.index] = output = self._finish(s)
                if on_done is not None:
                    on_done(s.index, output)
        self.stats.grammar_seconds += time.perf_counter() - start

    def _finish(self, slot: _Slot) -> EngineOutput:
        assert slot.request is not None
        truncated = slot.truncated and not slot.matcher.is_accepting()
        if not truncated and not slot.matcher.is_accepting():
            raise _grammar_failure(slot.matcher, "the output ended incomplete")
        request = slot.request
        output = EngineOutput(
            text=bytes(slot.out).decode("utf-8", errors="replace" if truncated else "strict"),
            truncated=truncated,
            completion_tokens=slot.n_out,
            sampled=slot.sampled,
            forced=slot.forced,
            prompt_tokens=len(request.tokens),
            evaluated_prompt_tokens=slot.cost,
            seconds=slot.seconds,
            decisions=slot.decisions.made,
            reading=slot.reading,
        )
        self.stats.sampled += slot.sampled
        self.stats.forced += slot.forced
        # the slot keeps its prompt's prefix for the next request (the generated cells go when
        # that one trims the slot to what it reuses)
        slot.request = slot.matcher = None
        return output


@contextlib.contextmanager
def _guarded() -> Iterator[None]:
    """Any failure inside the grammar machinery ends the call as a :class:`ConstraintError`:
    decoding never goes on without it. An interrupt stays an interrupt."""
    try:
        yield
    except LocalJudgeError:
        raise
    except Exception as exc:
        raise ConstraintError(
            f"constrained decoding failed: {type(exc).__name__}: {exc}",
            hint="the output was discarded; check that llguidance is installed and compatible",
        ) from exc


def _grammar_failure(matcher: Any, what: str) -> ConstraintError:
    detail = matcher.get_error() if matcher.is_error() else ""
    return ConstraintError(
        f"constrained decoding failed: {what}" + (f": {detail}" if detail else ""),
        hint="the output was discarded; check that llguidance is installed and compatible",
    )
