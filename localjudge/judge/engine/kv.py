"""The llama.cpp context under the judge engine and what its KV memory holds (:class:`KVCache`).

- **The context.** One stream of cells per sequence (``parallel`` slots and the *holder*, which
  holds the shared instruction prefix), made as large as the requests need and grown by
  doubling; its batch, each ``llama_decode`` call and the logits it leaves (read in place).
- **What each sequence holds** (:class:`~localjudge.judge.engine.branches.Held`): the tokens
  of its cells and the lengths at which their evaluation was cut, so that a request starts
  from the longest prefix any sequence holds: copied (``llama_memory_seq_cp``), trimmed to the
  reused length, the rest of its shared part evaluated (see
  :mod:`localjudge.judge.engine.batched` for why outputs do not depend on it).
- **The branch points' states**: what a sequence held at a request's branch point, serialised
  into host memory (:mod:`localjudge.judge.engine.branches` keeps them) and read back into
  the slot of a later request that begins with it.
- **The holder's prefix**, read from the prefix store (:mod:`localjudge.judge.engine.prefix_file`)
  as llama.cpp serialises a sequence, or evaluated and stored there.

The engine hands in the ``llama_cpp`` module (imported nowhere here; ``ctypes`` only for the
state buffers). Imports numpy, :mod:`localjudge.errors` and the judge's engine types, prefix
store and log hook, and the kept branch states.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from localjudge.errors import ModelError
from localjudge.judge.engine.branches import Held, Kept, KeptStates, upto
from localjudge.judge.engine.log import raise_pending_interrupt
from localjudge.judge.engine.prefix_file import PrefixStore
from localjudge.judge.engine.values import N_UBATCH, EngineRequest, EngineStats

#: the smallest per-sequence window a context is made with (it grows with the requests)
MIN_SEQ_CTX = 2048


@dataclass(frozen=True)
class Prepared:
    """What :meth:`KVCache.prepare` left in a sequence: the prompt length now in it, the prompt
    tokens the request cost, and the reading of its ``read`` span (sum, tokens; None: none)."""

    target: int
    cost: int
    reading: tuple[float, int] | None = None


class KVCache:
    """A llama.cpp context of ``parallel`` slot sequences and the holder, and the record of
    which prefix each sequence holds."""

    def __init__(
        self,
        llama_cpp: Any,
        model: Any,
        *,
        parallel: int,
        max_ctx: int,
        n_threads: int,
        flash_attn: str,
        n_vocab: int,
        stats: EngineStats,
        prefix_store: PrefixStore | None = None,
    ) -> None:
        self._ll = ll = llama_cpp
        self.model = model
        self.n_vocab = n_vocab
        self.parallel = parallel
        self.holder = parallel  # the prefix's sequence
        #: the largest per-sequence window
        self.max_ctx = max_ctx
        self.n_threads = n_threads
        self.flash_attn: int = {
            "on": ll.LLAMA_FLASH_ATTN_TYPE_ENABLED,
            "off": ll.LLAMA_FLASH_ATTN_TYPE_DISABLED,
            "auto": ll.LLAMA_FLASH_ATTN_TYPE_AUTO,
        }[flash_attn]
        self.stats = stats
        self.prefix_store = prefix_store
        self._ctx: Any = None
        self._seq_ctx = 0
        #: per sequence, what its cells hold for reuse (slots keep their last prompt)
        self._held: dict[int, Held] = {}
        #: the sequences that copies asked for since the last decode call read from (a copy is
        #: made at the next decode call: until then nothing may be loaded into them)
        self._copy_sources: set[int] = set()
        #: the branch points' states kept for later requests
        self.branches = KeptStates()

    # ------------------------------------------------------------------ the context

    def ensure_context(self, needed: int) -> None:
        """A context whose per-sequence window holds ``needed`` tokens (grown by doubling)."""
        if self._ctx is not None and needed <= self._seq_ctx:
            return
        size = max(MIN_SEQ_CTX, self._seq_ctx)
        while size < needed:
            size *= 2
        size = min(size, self.max_ctx)
        held = self._held.get(self.holder) if self._ctx is not None else None
        kept = self._state() if held is not None else None  # the instructions survive growth
        self.close()
        ll = self._ll
        p = ll.llama_context_default_params()
        n_seq = self.parallel + 1
        p.n_ctx = size * n_seq  # one stream of `size` cells per sequence
        p.n_batch = max(N_UBATCH, size)
        p.n_ubatch = N_UBATCH
        p.n_seq_max = n_seq
        p.n_threads = p.n_threads_batch = self.n_threads
        p.kv_unified = False
        p.swa_full = True  # a sliding-window cache never evicts the prefix
        p.flash_attn_type = self.flash_attn  # off by default, as Llama() runs it
        p.no_perf = True
        ctx = ll.llama_init_from_model(self.model, p)
        raise_pending_interrupt()
        if not ctx:
            raise ModelError(
                f"llama.cpp could not make a context of {n_seq} x {size} tokens",
                hint="lower --parallel or -c/--n-ctx (each parallel slot holds a window)",
            )
        self._ctx = ctx
        self._mem = ll.llama_get_memory(ctx)
        self._seq_ctx = size
        self._n_batch = int(ll.llama_n_batch(ctx))
        self._batch = ll.llama_batch_init(self._n_batch, 0, 1)
        self._tok = np.ctypeslib.as_array(self._batch.token, shape=(self._n_batch,))
        self._pos = np.ctypeslib.as_array(self._batch.pos, shape=(self._n_batch,))
        self._nseq = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(self._n_batch,))
        self._want = np.ctypeslib.as_array(self._batch.logits, shape=(self._n_batch,))
        self._seq_ids = [self._batch.seq_id[i] for i in range(self._n_batch)]
        self._held = {}
        self._copy_sources = set()
        if held is not None and kept is not None and self._load_state(kept, len(held.tokens)):
            self._held[self.holder] = held

    def close(self) -> None:
        """Free the context (a later run makes a new one)."""
        if self._ctx is not None:
            self._ll.llama_batch_free(self._batch)
            self._ll.llama_free(self._ctx)
            self._ctx = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown the library may be gone
            self.close()

    # ------------------------------------------------------------------ decoding

    def decode(self, entries: list[tuple[int, int, int, bool]], *, prompt: bool = False) -> None:
        """One ``llama_decode`` of (token, position, sequence, wants logits) entries
        (``prompt``: the call evaluates prompt tokens)."""
        for i, (token, pos, seq, want) in enumerate(entries):
            self._tok[i], self._pos[i], self._nseq[i] = token, pos, 1
            self._seq_ids[i][0] = seq
            self._want[i] = want
        self._batch.n_tokens = len(entries)
        start = time.perf_counter()
        rc = self._ll.llama_decode(self._ctx, self._batch)
        self._copy_sources.clear()  # a decode call makes the copies asked for before it
        raise_pending_interrupt()
        seconds = time.perf_counter() - start
        self.stats.decode_seconds += seconds
        if prompt:
            self.stats.prompt_seconds += seconds
        self.stats.decode_calls += 1
        if rc != 0:
            raise ModelError(f"llama_decode failed with code {rc}")

    def logits(self, i: int) -> np.ndarray:
        ptr = self._ll.llama_get_logits_ith(self._ctx, i)
        if not ptr:
            raise ModelError(f"llama.cpp returned no logits for batch entry {i}")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def _evaluate(
        self,
        seq: int,
        tokens: Sequence[int],
        start: int,
        end: int,
        cuts: Sequence[int],
        *,
        read: Collection[int] = (),
    ) -> dict[int, float]:
        """Evaluate ``tokens[start:end]`` into ``seq``: a decode call ending at each of ``cuts``
        inside the range, and :data:`N_UBATCH`-token ones from each such start (how the same
        tokens are cut whichever request evaluates them). Returns the log-probability of each
        position of ``read`` whose token and the one before it are in the range."""
        bounds = [p for p in cuts if start < p < end] + [end]
        at = start
        found: dict[int, float] = {}
        for bound in bounds:
            for first in range(at, bound, N_UBATCH):
                last = min(first + N_UBATCH, bound)
                # the logits at position p - 1 give the probability of token p
                want = [p - 1 for p in range(first + 1, last + 1) if p in read and p < end]
                rows = set(want)
                self.decode(
                    [(tokens[q], q, seq, q in rows) for q in range(first, last)], prompt=True
                )
                for q in want:
                    found[q + 1] = _logprob(self.logits(q - first), tokens[q + 1])
            at = bound
        self.stats.prompt_tokens_evaluated += end - start
        return found

    # ------------------------------------------------------------------ what sequences hold

    def prepare(self, seq: int, request: EngineRequest) -> Prepared:
        """Give ``seq`` the longest prefix of ``request``'s prompt some sequence holds (the
        instructions at least, from the holder), or a kept branch state that reaches further,
        and evaluate the prompt up to its last cut point (the item's shared part: a request
        started after it copies it), keeping the state at each of its branch points on the way.
        The ``read`` span's log-probabilities come from the prefix's record where it holds
        them, else from the evaluation (a prefix that lacks them is reused only up to where
        they start)."""
        ll = self._ll
        tokens = tuple(request.tokens)
        points = request.points()
        read = set(range(*request.read)) if request.read is not None else set()
        source, reused = self._source(tokens, points, seq, read)
        source_held = self._held.get(source)
        cost = 0
        self._held.pop(seq, None)  # until its cells are what the record says again
        kept = self._load_kept(seq, tokens, points, read, reused) if self.branches else None
        if kept is not None:  # a kept branch state reaches further than any sequence
            source, reused, source_held = seq, len(kept.held.tokens), kept.held
        elif reused < request.fixed:  # the instructions are held nowhere
            cost = self._set_prefix(tokens[: request.fixed])
            source, reused = self.holder, request.fixed
            source_held = self._held.get(source)
        if source != seq:
            ll.llama_memory_seq_rm(self._mem, seq, -1, -1)
            if reused:  # a whole-stream copy, made at the next decode call
                ll.llama_memory_seq_cp(self._mem, source, seq, -1, -1)
                self._copy_sources.add(source)
        ll.llama_memory_seq_rm(self._mem, seq, reused, -1)
        target = max([reused, *points])
        logprobs: dict[int, float] = {}
        if source_held is not None:
            logprobs.update((p, v) for p, v in source_held.logprobs.items() if p < reused)
        # evaluated in the same decode calls whether or not a branch point stops it on the way
        keep = [
            b for b in request.branches if reused < b <= target and tokens[:b] not in self.branches
        ]
        at = reused
        for stop in sorted({*keep, target}):
            if stop > at:
                logprobs.update(self._evaluate(seq, tokens, at, stop, points, read=read))
                at = stop
            if stop in keep:
                held = Held(tokens[:stop], upto(points, stop), dict(logprobs))
                self.branches.add(self._state(seq), held)
                self.stats.branch_saves += 1
        held_points = frozenset(p for p in points if p <= target)
        self._held[seq] = Held(tokens[:target], held_points, logprobs)
        self.stats.prompt_tokens_reused += reused
        reading = None
        if read:
            missing = read - logprobs.keys()
            if missing:
                raise AssertionError(f"read positions {sorted(missing)[:3]} were not evaluated")
            reading = (sum(logprobs[p] for p in sorted(read)), len(read))
        return Prepared(target, cost + len(tokens) - reused, reading)

    def _load_kept(
        self,
        seq: int,
        tokens: tuple[int, ...],
        points: Sequence[int],
        read: Collection[int],
        reused: int,
    ) -> Kept | None:
        """The kept branch state that holds the longest prefix of ``tokens`` beyond ``reused``,
        loaded into ``seq``; None where none reaches further, or where ``seq`` is the source
        of a copy not made yet (a load would change its cells under it)."""
        if seq in self._copy_sources:
            return None
        kept = self.branches.longest(tokens, points, read, reused)
        if kept is None:
            return None
        if not self._load_state(kept.state, len(kept.held.tokens), seq):
            self.branches.forget(kept.held.tokens)  # not taken whole: evaluated again instead
            return None
        self.branches.used(kept.held.tokens)
        self.stats.branch_loads += 1
        return kept

    def forget(self) -> None:
        """Forget every kept branch state and what the slots hold (the instructions stay in
        the holder): the next request evaluates its item from the instructions on."""
        self.branches.clear()
        self._held = {s: h for s, h in self._held.items() if s == self.holder}

    def drop(self, seq: int) -> None:
        """Empty ``seq`` (an interrupted run leaves no sequence behind)."""
        self._ll.llama_memory_seq_rm(self._mem, seq, -1, -1)
        self._held.pop(seq, None)

    def _set_prefix(self, prefix: tuple[int, ...]) -> int:
        """Put the instruction prefix into the holder: read from the prefix store, or evaluated
        (from position 0, cut at the ubatch size) and stored. Returns the tokens evaluated."""
        ll = self._ll
        ll.llama_memory_seq_rm(self._mem, self.holder, -1, -1)
        self._held.pop(self.holder, None)
        store = self.prefix_store
        # a copy from the holder not made yet would take what the store writes into it
        state = store.load(prefix) if store is not None and not self._copy_sources else None
        evaluated = 0
        loaded = state is not None and self._load_state(state, len(prefix))
        if state is not None and not loaded and store is not None:
            store.rejected("was not taken whole by llama.cpp")
        if not loaded:
            self._evaluate(self.holder, prefix, 0, len(prefix), ())
            self.stats.prefix_evaluations += 1
            evaluated = len(prefix)
            if store is not None:
                store.save(prefix, self._state())
        else:
            self.stats.prefix_loads += 1
        self._held[self.holder] = Held(prefix, frozenset({len(prefix)}))
        return evaluated

    def _state(self, seq: int | None = None) -> bytes:
        """A sequence's cells (the holder's by default) as llama.cpp serialises a sequence."""
        import ctypes  # noqa: PLC0415

        ll = self._ll
        seq = self.holder if seq is None else seq
        size = int(ll.llama_state_seq_get_size(self._ctx, seq))
        buffer = (ctypes.c_uint8 * size)()
        written = int(ll.llama_state_seq_get_data(self._ctx, buffer, size, seq))
        return bytes(buffer)[:written]

    def _load_state(self, state: bytes, n_tokens: int, seq: int | None = None) -> bool:
        """Read a serialised sequence into ``seq`` (the holder by default); False (the sequence
        left empty) unless llama.cpp took it whole and it holds exactly positions
        0..n_tokens-1."""
        import ctypes  # noqa: PLC0415

        ll = self._ll
        seq = self.holder if seq is None else seq
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        read = int(ll.llama_state_seq_set_data(self._ctx, buffer, len(state), seq))
        raise_pending_interrupt()
        ok = (
            read == len(state)
            and int(ll.llama_memory_seq_pos_min(self._mem, seq)) == 0
            and int(ll.llama_memory_seq_pos_max(self._mem, seq)) == n_tokens - 1
        )
        if not ok:
            ll.llama_memory_seq_rm(self._mem, seq, -1, -1)
        return ok

    def _source(
        self, tokens: Sequence[int], points: Sequence[int], own: int, read: Collection[int] = ()
    ) -> tuple[int, int]:
        """The sequence whose cells hold the longest reusable prefix of ``tokens`` and that
        prefix's length (0: none): a length at which both that sequence's evaluation and this
        request's are cut, the tokens equal up to it, and the record holding the log-probability
        of every ``read`` position up to it. Ties go to ``own`` (no copy). A sequence a sliding
        window has pruned (its first position is gone) holds nothing."""
        best, length = own, 0
        for seq, held in list(self._held.items()):
            common = _common_prefix(held.tokens, tokens)
            r = max(
                (
                    p
                    for p in points
                    if p <= common
                    and p in held.points
                    and all(q in held.logprobs for q in read if q <= p)
                ),
                default=0,
            )
            if r == 0 or r < length or (r == length and seq != own):
                continue
            if int(self._ll.llama_memory_seq_pos_min(self._mem, seq)) != 0:
                del self._held[seq]  # pruned by a sliding window: not a whole prefix any more
                continue
            best, length = seq, r
        return best, length


def _logprob(logits: np.ndarray, token: int) -> float:
    """log softmax(logits)[token], in double precision."""
    z = logits.astype(np.float64)
    top = z.max()
    return float(z[token] - top - np.log(np.exp(z - top).sum()))


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n
