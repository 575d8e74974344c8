"""What the judge engine (:mod:`localjudge.judge.engine.batched`) is given and gives back: a request
rendered to tokens (:class:`EngineRequest`, with the points at which its prompt is evaluated),
what one request produced (:class:`EngineOutput`) and the engine's counters
(:class:`EngineStats`), with the evaluation cuts that the requests and the KV memory
(:mod:`localjudge.judge.engine.kv`) share.

Pure data: imports :mod:`localjudge.judge.protocol` only, never ``llama_cpp`` or ``llguidance``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from localjudge.judge.protocol import SoftDecision

#: ubatch size, as llama-cpp-python's ``Llama`` evaluates prompts (the same cuts)
N_UBATCH = 512
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
    #: the prompt tokens ``[start, end)`` whose log-probabilities are read (each after the
    #: tokens before it), inside the shared part and after the fixed prefix; None: none
    read: tuple[int, int] | None = None
    #: the prompt lengths at which other requests branch off this one's prompt (ascending,
    #: after the fixed prefix): the engine keeps what it evaluated up to each of them, and a
    #: later request that begins with the same tokens continues from it, in any order.
    #: Empty: none (nothing is kept)
    branches: tuple[int, ...] = ()

    def points(self) -> list[int]:
        """The prompt lengths at which this request's evaluation is cut: where a cached prefix
        may end (ascending, each leaving at least one token to evaluate). Every prompt is
        evaluated in decode calls that end at these points (and at :data:`N_UBATCH`-token cuts
        from each), so a prefix reused from another sequence holds exactly what this request
        would compute itself."""
        n = len(self.tokens)
        points = {self.fixed, *self.branches}
        if self.shared is not None:
            points.add(self.shared)
        else:
            points.update(range(self.fixed + GRID, n, GRID))
        return sorted(p for p in points if 0 < p < n)


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
    #: the sum of the log-probabilities of the ``read`` tokens and their count (None: none read)
    reading: tuple[float, int] | None = None
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
    #: branch points' states kept in host memory, and read back into a sequence
    branch_saves: int = 0
    branch_loads: int = 0
    sampled: int = 0
    forced: int = 0
    argmax_accepted: int = 0
    full_masks: int = 0
