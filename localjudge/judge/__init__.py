"""The judge: everything between a rendered prompt and a validated verdict.

- :mod:`~localjudge.judge.protocol`: the narrow :class:`~localjudge.judge.protocol.Judge`
  interface every judge implements; :mod:`~localjudge.judge.schemas`: strict, bounded output
  schemas and their worst-case token budgets.
- :mod:`~localjudge.judge.llama`: the llama.cpp judge, driving :mod:`~localjudge.judge.engine`
  (many requests decoded together under llguidance grammars) on :mod:`~localjudge.judge.kv`
  (the context and what its sequences hold); :mod:`~localjudge.judge.prompting` (the chat
  template and the tokens of a prompt), :mod:`~localjudge.judge.native` (the build, the AMX
  decision, importing the backends) and :mod:`~localjudge.judge.tokens` (the token table).
  Only these use ``llama_cpp`` and ``llguidance``, imported inside functions.
  :mod:`~localjudge.judge.engine_types` (the engine's requests, outputs and counters),
  :mod:`~localjudge.judge.decisions` (soft verdicts read from the logits) and
  :mod:`~localjudge.judge.llama_log` (llama.cpp's log and a Ctrl-C inside it) import neither.
- :mod:`~localjudge.judge.options`: judge options shared by every entry point.
- :mod:`~localjudge.judge.registry` (with ``registry.json``), :mod:`~localjudge.judge.registry_edit`
  and :mod:`~localjudge.judge.ggufmeta`: which judges exist, their files and metadata.
- :mod:`~localjudge.judge.cache`, :mod:`~localjudge.judge.cache_format`,
  :mod:`~localjudge.judge.caching` and :mod:`~localjudge.judge.calllog`: the judge-call cache,
  its keys and rows, the wrapper in front of a judge, and the read-only call log;
  :mod:`~localjudge.judge.prefix_store`: the evaluated instruction prefix kept on disk.
- :mod:`~localjudge.judge.isolation`: the supervised child process, the one module that starts
  processes (``eval``, ``bench`` and ``doctor`` judge through it).

May import: :mod:`localjudge.errors`, :mod:`localjudge.canonical`, :mod:`localjudge.versions`,
:mod:`localjudge.data` and its own modules; nothing from metrics, stats, run, cli or the extras.
"""
