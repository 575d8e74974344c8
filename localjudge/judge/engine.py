"""The judge engine: many requests decoded together in one llama.cpp context, each under its own
llguidance grammar, sampling only what the grammar leaves open.

How it works (llama-cpp-python's low-level bindings; llama.cpp's ``examples/parallel`` and its
server's slots follow the same pattern):

- **One context, many sequences.** ``parallel`` slots plus a *holder* sequence that holds the
  shared instruction prefix (the prompt's fixed part), evaluated once, alone, or read from the
  prefix store (:mod:`localjudge.judge.prefix_store`), where the next process finds it. A finished
  slot keeps its prompt's cells and is refilled with the next request (continuous batching).
- **Every prompt token read once.** A request starts from the longest prefix any sequence
  holds (its own slot, another slot, the holder): copied (``llama_memory_seq_cp``) and trimmed
  to the reused length. A prompt is evaluated in decode calls cut at fixed points: the end of
  the instructions, the end of the item's shared part (its question and contexts, which the
  item's other metrics reuse) or, for a prompt that marks none, every :data:`GRID` tokens; and
  a prefix is reused only up to a point where both its evaluation and the request's are cut.
  So the reused cells are exactly the ones the request would compute itself, and outputs do
  not depend on what was reused. The item's shared part is evaluated when its first request
  starts, so a request started next to it copies it. A sequence whose first cells a sliding
  window dropped is never reused (the holder never generates, so its prefix stays whole; the
  context keeps a full-size SWA cache besides).
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
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np

from localjudge.errors import ConstraintError, LocalJudgeError, ModelError
from localjudge.judge.prefix_store import PrefixStore
from localjudge.judge.protocol import SoftDecision

#: requests decoded together by default (benchmarks/README.md, "engine": on a 2-core CPU more
#: requests at once do not decode faster)
DEFAULT_PARALLEL = 1
#: rows per decode call stay below this: CPU matmul kernels switch paths at 8 rows (K-quants'
#: tiled kernel), and a sequence alone never reaches it with one generated token
ROW_CAP = 8
#: ubatch size, as llama-cpp-python's ``Llama`` evaluates prompts (the same cuts)
N_UBATCH = 512
#: the smallest per-sequence window a context is made with (it grows with the requests)
MIN_SEQ_CTX = 2048
#: the block size in which a prompt with no marked shared part is evaluated after its fixed
#: prefix (so that another prompt with the same opening reuses its whole blocks)
GRID = 64


@dataclass(frozen=True)
class EngineRequest:
    """One judge call, rendered to tokens."""

    tokens: Sequence[int]
    #: how many leading tokens are the shared instruction prefix
    fixed: int
    #: an llguidance grammar (``llguidance.grammar_from(...)``)
    grammar: str
    #: the schema's worst-case output in tokens, never exceeded; or, when ``budgeted``, the
    #: budget: an output still open at it ends ``truncated``
    max_tokens: int
    #: decision keys and the JSON texts of their values, e.g. ``{"relevant": ("true", "false")}``
    decisions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    budgeted: bool = False
    #: where the part this request shares with its item's other requests ends (the question
    #: and contexts of a metric's prompt), in tokens; None: nothing is marked, and cached tokens
    #: after ``fixed`` are reused in whole blocks of :data:`GRID` tokens
    shared: int | None = None

    def points(self) -> list[int]:
        """The prompt lengths at which this request's evaluation is cut: where a cached prefix
        may end (ascending, each leaving at least one token to evaluate). Every prompt is
        evaluated in decode calls that end at these points (and at :data:`N_UBATCH`-token cuts
        from each), so a prefix reused from another sequence holds exactly what this request
        would compute itself."""
        n = len(self.tokens)
        points = {self.fixed}
        if self.shared is not None:
            points.add(self.shared)
        else:
            points.update(range(self.fixed + GRID, n, GRID))
        return sorted(p for p in points if 0 < p < n)


@dataclass(frozen=True)
class _Held:
    """What a sequence's KV cells hold that another request may reuse: the tokens (from
    position 0) and the lengths at which its evaluation was cut."""

    tokens: tuple[int, ...]
    points: frozenset[int]


@dataclass
class EngineOutput:
    """What one request produced."""

    text: str
    completion_tokens: int
    #: tokens chosen from logits / appended because the grammar forced them
    sampled: int
    forced: int
    prompt_tokens: int
    #: prompt tokens this request evaluated (the prefix came from the holder)
    evaluated_prompt_tokens: int
    seconds: float
    decisions: list[SoftDecision] = field(default_factory=list)
    #: a budgeted request's output reached its budget unfinished (``text`` is the partial
    #: output, to be discarded)
    truncated: bool = False


@dataclass
class EngineStats:
    """Counters over an engine's life (the benchmark reads them)."""

    decode_calls: int = 0
    decode_seconds: float = 0.0
    #: of which in calls that evaluate prompt tokens (prefixes, new prompts)
    prompt_seconds: float = 0.0
    grammar_seconds: float = 0.0
    prompt_tokens_evaluated: int = 0
    prefix_evaluations: int = 0
    #: instruction prefixes read from the prefix store instead of evaluated
    prefix_loads: int = 0
    #: prompt tokens a request took from a cached sequence instead of evaluating them
    prompt_tokens_reused: int = 0
    sampled: int = 0
    forced: int = 0
    argmax_accepted: int = 0
    full_masks: int = 0


# --------------------------------------------------------------------------- llama.cpp's log

#: interrupts that arrived while llama.cpp was calling back into Python to log a line
_interrupts: list[BaseException] = []
_log: dict[str, Any] = {"callback": None, "verbose": False}


def install_log(llama_cpp: Any, *, verbose: bool) -> None:
    """Route llama.cpp's log through a callback that prints errors (everything when
    ``verbose``) and keeps a Ctrl-C that lands inside it: ctypes would print and drop it, and the
    run would go on. :func:`raise_pending_interrupt` raises it once control is back in Python.

    A signal can arrive before the callback's first line (where no ``try`` holds it), so Python's
    default SIGINT handler is replaced, in the main thread and only while it is the default, by
    one that defers the interrupt when it lands in the callback and raises it anywhere else."""
    _log["verbose"] = verbose
    if _log["callback"] is not None:
        return

    def log_line(level: int, text: bytes, user_data: Any) -> None:
        try:
            if _log["verbose"] or level == 3:  # GGML_LOG_LEVEL_ERROR
                print(text.decode("utf-8", "replace"), end="", file=sys.stderr, flush=True)
        except BaseException as exc:  # noqa: BLE001 (an interrupt must survive the callback)
            _interrupts.append(exc)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if frame is not None and frame.f_code is log_line.__code__:
            _interrupts.append(KeyboardInterrupt())
            return
        signal.default_int_handler(signum, frame)

    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, on_sigint)
    # referenced for as long as llama.cpp may call it
    _log["callback"] = callback = llama_cpp.llama_log_callback(log_line)
    llama_cpp.llama_log_set(callback, None)


def raise_pending_interrupt() -> None:
    """Raise an interrupt that arrived inside llama.cpp's log callback, if one did."""
    if _interrupts:
        exc = _interrupts[0]
        _interrupts.clear()
        raise exc


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
    started: float = 0.0
    decision: _Open | None = None
    decided: set[int] = field(default_factory=set)
    decisions: list[SoftDecision] = field(default_factory=list)
    #: prompt tokens evaluated for this request (its instructions' too, when it needed them)
    cost: int = 0
    truncated: bool = False


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
        self._ll, self._llg = llama_cpp, llguidance
        self.model = model
        self.tokenizer = lltokenizer
        vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        self.eos = int(llama_cpp.llama_vocab_eos(vocab))
        self.parallel = parallel
        self.holder = parallel  # the prefix's sequence
        self.max_ctx = n_ctx
        self.n_threads = n_threads
        self.fast_forward = fast_forward
        self.flash_attn = {
            "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
            "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
            "auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
        }[flash_attn]
        self.stats = EngineStats()
        self._bitmask = llguidance.numpy.allocate_token_bitmask(1, lltokenizer.vocab_size)
        self._bytes_of: dict[int, bytes] = {}
        self.prefix_store = prefix_store
        self._ctx: Any = None
        self._seq_ctx = 0
        #: per sequence, what its cells hold for reuse (slots keep their last prompt)
        self._held: dict[int, _Held] = {}
        #: a sequence copy was asked for since the last decode call
        self._copying = False

    # ------------------------------------------------------------------ the context

    def _ensure_context(self, needed: int) -> None:
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
        self._copying = False
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

    def _decode(self, entries: list[tuple[int, int, int, bool]], *, prompt: bool = False) -> None:
        """One ``llama_decode`` of (token, position, sequence, wants logits) entries
        (``prompt``: the call evaluates prompt tokens)."""
        for i, (token, pos, seq, want) in enumerate(entries):
            self._tok[i], self._pos[i], self._nseq[i] = token, pos, 1
            self._seq_ids[i][0] = seq
            self._want[i] = want
        self._batch.n_tokens = len(entries)
        start = time.perf_counter()
        rc = self._ll.llama_decode(self._ctx, self._batch)
        self._copying = False  # a decode call makes the sequence copies asked for before it
        raise_pending_interrupt()
        seconds = time.perf_counter() - start
        self.stats.decode_seconds += seconds
        if prompt:
            self.stats.prompt_seconds += seconds
        self.stats.decode_calls += 1
        if rc != 0:
            raise ModelError(f"llama_decode failed with code {rc}")

    def _logits(self, i: int) -> np.ndarray:
        ptr = self._ll.llama_get_logits_ith(self._ctx, i)
        if not ptr:
            raise ModelError(f"llama.cpp returned no logits for batch entry {i}")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def _evaluate(
        self, seq: int, tokens: Sequence[int], start: int, end: int, cuts: Sequence[int]
    ) -> None:
        """Evaluate ``tokens[start:end]`` into ``seq``: a decode call ending at each of ``cuts``
        inside the range, and :data:`N_UBATCH`-token ones from each such start (how the same
        tokens are cut whichever request evaluates them)."""
        bounds = [p for p in cuts if start < p < end] + [end]
        at = start
        for bound in bounds:
            for first in range(at, bound, N_UBATCH):
                chunk = tokens[first : min(first + N_UBATCH, bound)]
                self._decode([(t, first + k, seq, False) for k, t in enumerate(chunk)], prompt=True)
            at = bound
        self.stats.prompt_tokens_evaluated += end - start

    def _set_prefix(self, prefix: tuple[int, ...]) -> int:
        """Put the instruction prefix into the holder: read from the prefix store, or evaluated
        (from position 0, cut at the ubatch size) and stored. Returns the tokens evaluated."""
        ll = self._ll
        ll.llama_memory_seq_rm(self._mem, self.holder, -1, -1)
        self._held.pop(self.holder, None)
        store = self.prefix_store
        # a copy from the holder not made yet would take what the store writes into it
        state = store.load(prefix) if store is not None and not self._copying else None
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
        self._held[self.holder] = _Held(prefix, frozenset({len(prefix)}))
        return evaluated

    def _state(self) -> bytes:
        """The holder's cells as llama.cpp serialises a sequence."""
        import ctypes  # noqa: PLC0415

        ll = self._ll
        size = int(ll.llama_state_seq_get_size(self._ctx, self.holder))
        buffer = (ctypes.c_uint8 * size)()
        written = int(ll.llama_state_seq_get_data(self._ctx, buffer, size, self.holder))
        return bytes(buffer)[:written]

    def _load_state(self, state: bytes, n_tokens: int) -> bool:
        """Read a stored prefix into the holder; False (the holder left empty) unless llama.cpp
        took it whole and it holds exactly positions 0..n_tokens-1."""
        import ctypes  # noqa: PLC0415

        ll = self._ll
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        read = int(ll.llama_state_seq_set_data(self._ctx, buffer, len(state), self.holder))
        raise_pending_interrupt()
        ok = (
            read == len(state)
            and int(ll.llama_memory_seq_pos_min(self._mem, self.holder)) == 0
            and int(ll.llama_memory_seq_pos_max(self._mem, self.holder)) == n_tokens - 1
        )
        if not ok:
            ll.llama_memory_seq_rm(self._mem, self.holder, -1, -1)
        return ok

    def _source(self, tokens: Sequence[int], points: Sequence[int], own: int) -> tuple[int, int]:
        """The sequence whose cells hold the longest reusable prefix of ``tokens`` and that
        prefix's length (0: none): a length at which both that sequence's evaluation and this
        request's are cut, the tokens equal up to it. Ties go to ``own`` (no copy). A
        sequence a sliding window has pruned (its first position is gone) holds nothing."""
        best, length = own, 0
        for seq, held in list(self._held.items()):
            common = _common_prefix(held.tokens, tokens)
            r = max((p for p in points if p <= common and p in held.points), default=0)
            if r == 0 or r < length or (r == length and seq != own):
                continue
            if int(self._ll.llama_memory_seq_pos_min(self._mem, seq)) != 0:
                del self._held[seq]  # pruned by a sliding window: not a whole prefix any more
                continue
            best, length = seq, r
        return best, length

    def _start(self, slot: _Slot, index: int, request: EngineRequest) -> None:
        """Give ``slot`` the longest prefix some sequence holds (the instructions at least,
        from the holder), evaluate the prompt up to its last cut point (the item's shared part:
        a request started after it copies it), and leave the rest to the decode loop."""
        ll = self._ll
        tokens = tuple(request.tokens)
        points = request.points()
        source, reused = self._source(tokens, points, slot.seq)
        cost = 0
        self._held.pop(slot.seq, None)  # until its cells are what the record says again
        if reused < request.fixed:  # the instructions are held nowhere
            cost = self._set_prefix(tokens[: request.fixed])
            source, reused = self.holder, request.fixed
        if source != slot.seq:
            ll.llama_memory_seq_rm(self._mem, slot.seq, -1, -1)
            if reused:  # a whole-stream copy, made at the next decode call
                ll.llama_memory_seq_cp(self._mem, source, slot.seq, -1, -1)
                self._copying = True
        ll.llama_memory_seq_rm(self._mem, slot.seq, reused, -1)
        target = max([reused, *points])
        if target > reused:
            self._evaluate(slot.seq, tokens, reused, target, points)
        self._held[slot.seq] = _Held(tokens[:target], frozenset(p for p in points if p <= target))
        self.stats.prompt_tokens_reused += reused
        slot.cost = cost + len(tokens) - reused
        matcher = self._llg.LLMatcher(self.tokenizer, request.grammar, log_level=0)
        if matcher.is_error():
            raise ConstraintError(f"the output grammar is invalid: {matcher.get_error()}")
        slot.index, slot.request, slot.matcher = index, request, matcher
        slot.pos = target
        slot.pending = list(tokens[target:])
        slot.prefilled = False
        slot.out, slot.n_out, slot.sampled, slot.forced = bytearray(), 0, 0, 0
        slot.truncated = False
        slot.decision, slot.decided, slot.decisions = None, set(), []
        slot.started = time.perf_counter()
        if self.fast_forward:  # the forced opening ('{"verdicts":[{"index":0,"reason":"')
            self._push_forced(slot)

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
        decision = self._decision(slot)
        best = int(np.argmax(logits))
        if decision is None and not m.compute_ff_bytes() and m.validate_tokens([best]) == 1:
            self.stats.argmax_accepted += 1
            return best
        allowed = self._allowed(m)
        self.stats.full_masks += 1
        best = int(allowed[np.argmax(logits[allowed])])  # the first maximum, as greedy takes
        if decision is not None:
            self._weigh(slot, decision, logits, allowed, best)
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
        self._close_decision(slot)
        if m.is_error():  # is_stopped() is true on an error too: test the error first
            raise _grammar_failure(m, "the matcher failed")
        if m.is_stopped() or slot.truncated:
            return True
        if self.fast_forward:
            self._push_forced(slot)
            self._close_decision(slot)
            if m.is_error():
                raise _grammar_failure(m, "the matcher failed")
            if m.is_stopped() or slot.truncated:
                return True
        return False

    # ------------------------------------------------------------------ soft verdicts

    def _decision(self, slot: _Slot) -> _Open | None:
        """The decision the next token belongs to, if a key's value is still open."""
        if slot.decision is not None:
            return slot.decision
        assert slot.request is not None
        out = bytes(slot.out)
        for key, values in slot.request.decisions.items():
            mark = b'"' + key.encode() + b'":'
            at = out.rfind(mark)
            if at < 0 or at in slot.decided:
                continue
            start = at + len(mark)
            d = _Open(key, start, values)
            if len([v for v in d.values if v.startswith(out[start:])]) >= 2:
                slot.decision = d
                return d
        return None

    def _weigh(
        self, slot: _Slot, d: _Open, logits: np.ndarray, allowed: np.ndarray, chosen: int
    ) -> None:
        so_far = bytes(slot.out[d.start :])
        z = logits[allowed].astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        carried = 0.0
        for token, pt in zip(allowed.tolist(), p.tolist(), strict=True):
            fits = d.fits(so_far + self._bytes(token))
            if len(fits) == 1:
                d.mass[fits[0]] += d.weight * pt
            elif token == chosen:
                carried = pt  # the value stays open along the greedy path
        d.weight *= carried

    def _close_decision(self, slot: _Slot) -> None:
        d = slot.decision
        if d is None:
            return
        so_far = bytes(slot.out[d.start :])
        if len([v for v in d.values if v.startswith(so_far)]) >= 2:
            return
        chosen = next(v for v in d.values if so_far.startswith(v) or v.startswith(so_far))
        total = sum(d.mass.values()) or 1.0
        slot.decisions.append(
            SoftDecision(
                key=d.key,
                probs={v.decode(): m / total for v, m in d.mass.items()},
                chosen=chosen.decode(),
            )
        )
        slot.decided.add(d.start - len(d.key) - 3)
        slot.decision = None

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
        self._ensure_context(max(len(r.tokens) + r.max_tokens for r in requests))
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
                    self._ll.llama_memory_seq_rm(self._mem, s.seq, -1, -1)
                    self._held.pop(s.seq, None)
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
        if not entries:
            return
        self._decode(entries, prompt=prompt)
        start = time.perf_counter()
        for s, i in reads:
            with _guarded():
                finished = self._advance(s, self._logits(i))
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
            seconds=time.perf_counter() - slot.started,
            decisions=slot.decisions,
        )
        self.stats.sampled += slot.sampled
        self.stats.forced += slot.forced
        # the slot keeps its prompt's prefix for the next request (the generated cells go when
        # that one trims the slot to what it reuses)
        slot.request = slot.matcher = None
        return output


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


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
