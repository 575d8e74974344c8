"""What the judge engine keeps of a sequence for later requests: the record of what its KV cells
hold (:class:`Held`), and the states of requests' branch points kept in host memory
(:class:`KeptStates`), so that an opening many requests begin with (an item's shared text, one
passage) is evaluated once, whatever runs in between.

Pure data and bookkeeping: the bytes are llama.cpp's serialisation of a sequence, made and read
back by :mod:`localjudge.judge.engine.kv`; nothing here calls llama.cpp.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

#: the bytes of host memory the kept branch states may take together (the least recently used
#: go first): about 36,000 tokens of the default judge's KV cells. With reasons on, protocol 2
#: keeps each explained decision's state until its reason, asked after a chunk's decisions: at
#: 256 MiB most were gone by then (the README's examples on SmolLM2 evaluated 21,066 prompt
#: tokens, 12,951 with room for all, what reading each node once costs)
KEEP_BYTES = 1024 * 2**20


@dataclass(frozen=True)
class Held:
    """What a sequence's KV cells hold that another request may reuse: the tokens (from
    position 0) and the lengths at which their evaluation was cut."""

    tokens: tuple[int, ...]
    points: frozenset[int]
    #: the log-probabilities read while these cells were evaluated: position -> log P(that
    #: token | the tokens before it) (a request's ``read`` span)
    logprobs: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Kept:
    """A branch point's state: a sequence's cells as llama.cpp serialises them, and the record
    of what they hold."""

    state: bytes
    held: Held


class KeptStates:
    """The branch points' states, by the tokens they hold, the least recently used first out
    once they take more than ``limit`` bytes (the newest always stays)."""

    def __init__(self, limit: int = KEEP_BYTES) -> None:
        #: the most host memory the kept states may take
        self.limit = limit
        self._kept: OrderedDict[tuple[int, ...], Kept] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, tokens: object) -> bool:
        return tokens in self._kept

    @property
    def size(self) -> int:
        """The bytes of host memory the kept states take."""
        return self._bytes

    def add(self, state: bytes, held: Held) -> None:
        """Keep ``state``, which holds exactly what ``held`` records."""
        self.forget(held.tokens)
        self._kept[held.tokens] = Kept(state, held)
        self._bytes += len(state)
        while self._bytes > self.limit and len(self._kept) > 1:
            self.forget(next(iter(self._kept)))

    def longest(
        self,
        tokens: tuple[int, ...],
        points: Collection[int],
        read: Collection[int],
        beyond: int,
    ) -> Kept | None:
        """The kept state that holds the longest prefix of ``tokens``, longer than ``beyond``;
        None where none does. A kept prefix counts only where its evaluation was cut at
        exactly the ``points`` of this request up to its end (so its cells are the ones the
        request would compute itself) and its record holds every ``read`` position up to it."""
        found: Kept | None = None
        for key, kept in self._kept.items():
            r = len(key)
            if r <= (beyond if found is None else len(found.held.tokens)):
                continue
            if r not in points or tokens[:r] != key or kept.held.points != upto(points, r):
                continue
            if all(q in kept.held.logprobs for q in read if q <= r):
                found = kept
        return found

    def used(self, tokens: tuple[int, ...]) -> None:
        """Mark the state that holds ``tokens`` as the most recently used."""
        self._kept.move_to_end(tokens)

    def forget(self, tokens: tuple[int, ...]) -> None:
        """Drop the state that holds ``tokens``, if one is kept."""
        kept = self._kept.pop(tokens, None)
        if kept is not None:
            self._bytes -= len(kept.state)

    def clear(self) -> None:
        self._kept.clear()
        self._bytes = 0


def upto(points: Collection[int], end: int) -> frozenset[int]:
    """The cut points up to ``end``."""
    return frozenset(p for p in points if p <= end)
