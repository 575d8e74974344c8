"""The judge: everything between a rendered prompt and a validated verdict.

At the top, what every other layer may use (each module's docstring says so):

- :mod:`~localjudge.judge.protocol`: the narrow :class:`~localjudge.judge.protocol.Judge`
  interface every judge implements, and its requests, generations and identity;
- :mod:`~localjudge.judge.schemas`: strict, bounded output schemas and their worst-case budgets;
- :mod:`~localjudge.judge.soft`: soft verdicts, the probability of each allowed value;
- :mod:`~localjudge.judge.isolation`: the supervised child process, the one module that starts
  processes (``eval``, ``bench`` and ``doctor`` judge through it).

Below them, one subpackage per responsibility, imported only by the composition points (the
package's API, :mod:`localjudge.run.settings`, the CLI, ``doctor``, the adapters in
:mod:`localjudge.integrations` and the Ray driver); metrics, statistics and the rest of the runner
use the top only (``tests/unit/test_layering.py`` checks it):

- :mod:`localjudge.judge.llama`: the llama.cpp judge (loading a GGUF file, prompts, tokens, the
  native build, the judge options);
- :mod:`localjudge.judge.engine`: the batched decoding engine under it (contexts, sequences,
  grammars, the stored instruction prefix, llama.cpp's log);
- :mod:`localjudge.judge.cache`: the judge-call cache, its wrapper and its read-only call log;
- :mod:`localjudge.judge.models`: the registry of installed judges, their metadata and stored
  cut-offs.

Inside ``judge/`` arrows point down too: the top imports no subpackage; ``engine`` and ``cache``
import only the top; ``models`` the top and ``cache``; ``llama`` any of them.

May import: :mod:`localjudge.errors`, :mod:`localjudge.canonical`, :mod:`localjudge.versions`,
:mod:`localjudge.data` and its own modules; nothing from metrics, stats, run, cli or the extras.
"""
