"""The judge engine: many requests decoded together in one llama.cpp context.

Owns what happens between rendered tokens and finished outputs:
:mod:`~localjudge.judge.engine.batched` (:class:`Engine`: the slots, the decode batches, each
request under its own llguidance grammar), :mod:`~localjudge.judge.engine.values` (the
requests, outputs and counters it is given and gives back), :mod:`~localjudge.judge.engine.kv`
(the context and what its sequences hold), :mod:`~localjudge.judge.engine.branches` (the
branch points' states kept for later requests), :mod:`~localjudge.judge.engine.prefix_file` (the
evaluated instruction prefix kept on disk) and :mod:`~localjudge.judge.engine.log` (llama.cpp's
log, and a Ctrl-C that lands inside it). It knows nothing of models' files, prompts or caches:
:mod:`localjudge.judge.llama` hands it a loaded model and token lists.

Offers: :class:`Engine`, :data:`DEFAULT_PARALLEL` (the judge's default ``parallel``) and
:data:`PREFIX_DIR` (where the stored prefixes lie beside a cache).
"""

from localjudge.judge.engine.batched import DEFAULT_PARALLEL, Engine
from localjudge.judge.engine.prefix_file import PREFIX_DIR

__all__ = ["DEFAULT_PARALLEL", "PREFIX_DIR", "Engine"]
