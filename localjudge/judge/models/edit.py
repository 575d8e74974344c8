"""Editing and inspecting judges: ``localjudge models add``, ``remove``, ``info`` and
``list --found``.

:func:`add_model` registers a GGUF file (a path or a store name such as ``ollama:qwen2.5:7b``)
under an alias in the user's registry (checked first: magic, metadata, sha256),
:func:`remove_model` takes one out, :func:`model_info` reads what a file says about itself
(:mod:`localjudge.judge.models.ggufmeta`) and :func:`found_models` what the other tools' stores
hold (:mod:`localjudge.judge.models.external`). Reading the registries and resolving an alias to a
file is :mod:`localjudge.judge.models.registry`'s.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localjudge.errors import ModelError, UsageError
from localjudge.judge.models.external import (
    Found,
    Skipped,
    StoreModel,
    find_models,
    is_store_spec,
    resolve_store,
)
from localjudge.judge.models.ggufmeta import GGUFMetadata, check_gguf, read_gguf_metadata
from localjudge.judge.models.registry import (
    ALIAS_PATTERN,
    RegisteredJudge,
    builtin_registry,
    model_sha256,
    read_user_registry,
    registry,
    resolve_model,
    user_registry,
    user_registry_path,
)

# ---------------------------------------------------------------------- the user registry


__all__ = ["FoundModels", "ModelInfo", "add_model", "found_models", "model_info", "remove_model"]


@dataclass(frozen=True)
class ModelInfo:
    """What ``localjudge models info`` shows: a GGUF file's metadata and registry entry."""

    path: Path
    #: the registered alias, or None for a plain path
    alias: str | None
    #: ``built-in`` or ``user`` for an alias, None for a plain path
    registry: str | None
    size_bytes: int
    sha256: str
    #: the sha256 the registry expects (None: not registered, or registered without one)
    expected_sha256: str | None
    metadata: GGUFMetadata
    #: the store entry the name resolved through (None: an alias or a path)
    origin: StoreModel | None = None

    @property
    def sha256_ok(self) -> bool | None:
        """Whether the file matches the registry's sha256 (None: nothing to compare)."""
        return None if self.expected_sha256 is None else self.sha256 == self.expected_sha256

    def as_dict(self) -> dict[str, Any]:
        return {
            "alias": self.alias,
            "registry": self.registry,
            "path": str(self.path),
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "expected_sha256": self.expected_sha256,
            "sha256_ok": self.sha256_ok,
            **self.metadata.as_dict(),
            **_origin_dict(self.origin),
        }


def model_info(spec: str | os.PathLike[str]) -> ModelInfo:
    """The metadata of a registered alias (built-in or user) or a GGUF path, read with the
    ``gguf`` package (no llama.cpp). A built-in judge's file is located in its package (a
    chunked one is assembled first). Raises :class:`ModelError` for a missing, non-GGUF or
    truncated file."""
    resolved = resolve_model(spec)
    origin = None
    if resolved.alias is not None:
        user = {j.alias for j in user_registry()}
        origin = "user" if resolved.alias in user else "built-in"
    check_gguf(resolved.path)
    metadata = read_gguf_metadata(resolved.path)
    return ModelInfo(
        path=resolved.path,
        alias=resolved.alias,
        registry=origin,
        size_bytes=resolved.path.stat().st_size,
        sha256=model_sha256(resolved.path),
        expected_sha256=resolved.expected_sha256,
        metadata=metadata,
        origin=resolved.origin,
    )


def _origin_dict(origin: StoreModel | None) -> dict[str, Any]:
    """Where a store name resolved (a manifest, a snapshot link, a file), for ``as_dict``."""
    if origin is None:
        return {"store": None}
    return {"store": origin.spec, "store_entry": str(origin.where), "store_notes": origin.notes}


def add_model(
    path: str | os.PathLike[str],
    alias: str,
    *,
    force: bool = False,
    description: str | None = None,
) -> ModelInfo:
    """Register the GGUF file at ``path`` as ``alias`` in the user registry, with its sha256
    (a file that changes later is refused at load) and a description from its metadata.
    ``path`` may be a store name (``ollama:qwen2.5:7b``): the entry keeps the name, resolved
    again at each use, and the sha256 of the file it leads to now.

    An alias that exists (built-in or user) is a :class:`UsageError` unless ``force``; a user
    alias named like a built-in one replaces it. A missing, non-GGUF or truncated file is a
    :class:`ModelError` naming it. Nothing is copied or downloaded: the entry points at the file.
    """
    if not ALIAS_PATTERN.fullmatch(alias):
        raise UsageError(
            f"alias {alias!r} is not allowed",
            hint="use letters, digits and . _ + - (at most 64, starting with a letter or digit)",
        )
    spec = os.fspath(path)
    origin = resolve_store(spec) if is_store_spec(spec) else None
    file = origin.path if origin is not None else Path(spec).expanduser().resolve()
    check_gguf(file)
    metadata = read_gguf_metadata(file)
    taken = {j.alias: j for j in registry()}
    if alias in taken and not force:
        where = "user" if alias in {j.alias for j in user_registry()} else "built-in"
        held = taken[alias].path or taken[alias].file
        raise UsageError(
            f"alias {alias!r} is already registered ({where}: {held})",
            hint="pass --overwrite (library: force=True) to replace it",
        )
    entry: dict[str, Any] = {
        "alias": alias,
        "path": str(file),
        "sha256": model_sha256(file),
        # an instruct model is prompted through its template; without one, a plain prompt
        "instruct": metadata.chat_template,
        "description": description if description is not None else metadata.summary(),
        **({"store": origin.spec} if origin is not None else {}),
    }
    data = read_user_registry() or {"format": 1, "judges": []}
    write_user_registry({**data, "judges": [*_without(data, alias), entry]})
    return model_info(alias)


def remove_model(alias: str) -> RegisteredJudge:
    """Remove a user alias from the user registry; returns the removed entry. A built-in alias
    is a :class:`UsageError` (the package's registry is read-only); an unknown one a
    :class:`ModelError`. Removing a user alias that shadowed a built-in one brings that back."""
    entries = {j.alias: j for j in user_registry()}
    if alias not in entries:
        if alias in {j.alias for j in builtin_registry()}:
            raise UsageError(
                f"'{alias}' is a built-in judge and cannot be removed",
                hint="only aliases added with `localjudge models add` can be removed",
            )
        raise ModelError(
            f"no user alias '{alias}' in {user_registry_path()}",
            hint=f"user aliases: {', '.join(entries) or 'none'}",
        )
    data = read_user_registry() or {}
    write_user_registry({**data, "judges": _without(data, alias)})
    return entries[alias]


def _without(data: dict[str, Any], alias: str) -> list[Any]:
    """The user registry's entries but ``alias``'s, as written (unknown keys kept)."""
    judges = data.get("judges", [])
    if not isinstance(judges, list):
        raise ModelError(f"{user_registry_path()}: expected an object with a 'judges' list")
    return [j for j in judges if not (isinstance(j, dict) and j.get("alias") == alias)]


def write_user_registry(data: dict[str, Any]) -> None:
    """Write the user registry whole (a temporary file renamed over it: never half a file)."""
    target = user_registry_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    tmp.replace(target)


@dataclass(frozen=True)
class FoundModels:
    """What ``localjudge models list --found`` shows: each judge the stores hold with its GGUF
    metadata, each entry skipped with why, and the store roots searched."""

    judges: list[tuple[StoreModel, GGUFMetadata]]
    skipped: list[Skipped]
    roots: dict[str, list[Path]]


def found_models(stores: Found | None = None) -> FoundModels:
    """The GGUF judges in Ollama's, LM Studio's and the Hugging Face cache's folders, with their
    metadata (a file the ``gguf`` reader cannot parse is skipped, with the reader's words).
    Nothing is hashed, loaded or downloaded."""
    found = stores if stores is not None else find_models()
    judges, skipped = [], list(found.skipped)
    for model in found.models:
        try:
            metadata = read_gguf_metadata(model.path)
        except ModelError as exc:
            skipped.append(Skipped(model.spec, model.where, exc.message))
            continue
        if metadata.architecture == "clip":
            why = "a multimodal projector (architecture clip), not a judge"
            skipped.append(Skipped(model.spec, model.where, why))
            continue
        judges.append((model, metadata))
    return FoundModels(judges, skipped, found.roots)
