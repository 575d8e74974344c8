"""The installed judges: which exist, where their files are, and the cut-offs stored for them.

Owns :mod:`~localjudge.judge.models.registry` (aliases, installed model packages and plain GGUF
paths, resolved to a checked file; with the package data ``registry.json``),
:mod:`~localjudge.judge.models.edit` (``localjudge models add``, ``remove``, ``info``, ``list
--found``), :mod:`~localjudge.judge.models.external` (the GGUF files of Ollama, LM Studio and the
Hugging Face cache, by the names those tools give them),
:mod:`~localjudge.judge.models.ggufmeta` (a GGUF file's header and metadata, without
llama.cpp). The cut-offs
stored in the registries are :mod:`localjudge.decisions.cutoff_registry`'s. Nothing here loads a
model or downloads anything.

Offers: :data:`DEFAULT_ALIAS`, :class:`ResolvedModel`, :func:`resolve_model`, :func:`check_gguf`,
:func:`model_sha256`, :func:`list_models`, :func:`user_registry_path`,
:func:`read_user_registry`, :func:`write_user_registry`; :func:`add_model`,
:func:`remove_model`, :func:`model_info`, :func:`found_models`, :func:`human_count`;
:func:`is_store_spec`, :func:`store_roots`.
"""

from localjudge.judge.models.edit import (
    add_model,
    found_models,
    model_info,
    remove_model,
    write_user_registry,
)
from localjudge.judge.models.external import is_store_spec, store_roots
from localjudge.judge.models.ggufmeta import check_gguf, human_count
from localjudge.judge.models.registry import (
    DEFAULT_ALIAS,
    ResolvedModel,
    list_models,
    model_sha256,
    read_user_registry,
    resolve_model,
    user_registry_path,
)

__all__ = [
    "DEFAULT_ALIAS",
    "ResolvedModel",
    "add_model",
    "check_gguf",
    "found_models",
    "human_count",
    "is_store_spec",
    "list_models",
    "model_info",
    "model_sha256",
    "read_user_registry",
    "remove_model",
    "resolve_model",
    "store_roots",
    "user_registry_path",
    "write_user_registry",
]
