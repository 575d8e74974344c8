"""The llama.cpp judge: a GGUF model in-process, one :class:`~localjudge.judge.protocol.Judge`.

Owns loading a GGUF file with llama-cpp-python and everything on the model's side of a call:
:mod:`~localjudge.judge.llama.judge` (:class:`LlamaJudge` and :func:`load_judge`, which drive
:mod:`localjudge.judge.engine`), :mod:`~localjudge.judge.llama.prompting` (the chat template and
the tokens of a prompt), :mod:`~localjudge.judge.llama.tokens` (llguidance's token table),
:mod:`~localjudge.judge.llama.native` (the native build, the AMX decision, importing the
backends) and :mod:`~localjudge.judge.llama.options` (the judge options every entry point parses
alike). ``llama_cpp`` and ``llguidance`` are imported inside functions, never at import.

Offers: :class:`LlamaJudge`, :func:`load_judge`; the options :data:`DEFAULT_FLASH_ATTN`,
:func:`default_threads`, :func:`flash_attn_mode`,
:func:`chat_template_kwargs`; and for ``localjudge doctor`` :data:`AMX_ENV`,
:func:`amx_decision`, :func:`native_info`. Only the composition points (the package's API,
:mod:`localjudge.run.settings`, the CLI, ``doctor``, the adapters and the Ray driver) import it.
"""

from localjudge.judge.llama.judge import LlamaJudge, load_judge
from localjudge.judge.llama.native import AMX_ENV, amx_decision, native_info
from localjudge.judge.llama.options import (
    DEFAULT_FLASH_ATTN,
    chat_template_kwargs,
    default_threads,
    flash_attn_mode,
)

__all__ = [
    "AMX_ENV",
    "DEFAULT_FLASH_ATTN",
    "LlamaJudge",
    "amx_decision",
    "chat_template_kwargs",
    "default_threads",
    "flash_attn_mode",
    "load_judge",
    "native_info",
]
