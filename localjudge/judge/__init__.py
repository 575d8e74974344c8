"""The judge: everything between a rendered prompt and a validated verdict.

Owns the judge protocol (:mod:`~localjudge.judge.protocol`), the output schemas and their token
budgets (:mod:`~localjudge.judge.schemas`), the llama.cpp judge (:mod:`~localjudge.judge.llama`)
and its batched engine (:mod:`~localjudge.judge.engine`, the only modules that import
``llama_cpp`` and ``llguidance``, lazily), the judge options, the registry of judges with its
``registry.json`` and GGUF metadata, the call cache and its read-only log, the stored instruction
prefix, and :mod:`~localjudge.judge.isolation`, the one module that starts child processes.

May import: :mod:`localjudge.errors`, :mod:`localjudge.canonical`, :mod:`localjudge.versions` and
its own modules; nothing from metrics, data, stats, run, cli or the extras.
"""
