"""A GGUF file's header and metadata: :func:`check_gguf`'s cheap structural checks (standard
library), and the metadata read with the ``gguf`` package (no llama.cpp, no model load).

``gguf`` is imported when a file is read, so importing this module stays light.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localjudge.errors import ModelError

GGUF_MAGIC = b"GGUF"
#: the smallest GGUF file: magic, version, tensor count, metadata count
_GGUF_HEADER_BYTES = 24


@dataclass(frozen=True)
class GGUFMetadata:
    """What ``localjudge models info`` reports of a GGUF file."""

    gguf_version: int
    #: ``general.architecture`` (``llama``, ``gemma3``, ...)
    architecture: str | None
    #: ``general.name``
    name: str | None
    #: ``<architecture>.context_length``: the context the model was trained with
    context_length: int | None
    #: whether ``tokenizer.chat_template`` is present
    chat_template: bool
    #: the file type (``general.file_type``) as llama.cpp names it: ``Q4_1``, ``Q4_K_M``, ``F16``
    quantization: str | None
    #: the number of weights, summed over the file's tensors
    parameters: int
    #: ``general.size_label`` (``135M``), when the converter wrote one
    size_label: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "gguf_version": self.gguf_version,
            "architecture": self.architecture,
            "name": self.name,
            "context_length": self.context_length,
            "chat_template": self.chat_template,
            "quantization": self.quantization,
            "parameters": self.parameters,
            "size_label": self.size_label,
        }

    def summary(self) -> str:
        """One line for a registry description: ``llama, Q4_1, 135M parameters, ctx 8192``."""
        parts = [self.name or self.architecture or "GGUF model"]
        if self.quantization:
            parts.append(self.quantization)
        parts.append(f"{self.size_label or human_count(self.parameters)} parameters")
        if self.context_length:
            parts.append(f"ctx {self.context_length}")
        return ", ".join(parts)


def human_count(n: int) -> str:
    """``134515008`` -> ``135M``; ``2_600_000_000`` -> ``2.6B``."""
    for size, unit in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def file_type_name(value: int) -> str:
    """llama.cpp's name of a ``general.file_type`` value, without ``MOSTLY_`` / ``ALL_``."""
    import gguf  # noqa: PLC0415

    try:
        name = gguf.LlamaFileType(value).name
    except ValueError:
        return f"file type {value}"
    for prefix in ("MOSTLY_", "ALL_"):
        name = name.removeprefix(prefix)
    return name


def read_gguf_metadata(path: Path) -> GGUFMetadata:
    """The metadata of the GGUF file at ``path``. Raises :class:`ModelError` naming the file
    when it cannot be parsed (the reader maps every tensor, so a file cut short fails too)."""
    import gguf  # noqa: PLC0415 (numpy and the reader only when a file is read)

    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # the reader raises ValueError, IndexError, struct errors...
        raise ModelError(
            f"model file {path} is truncated or corrupt: the GGUF reader failed with "
            f"{type(exc).__name__}: {exc}",
            hint="copy or download it again",
        ) from exc

    def field(key: str) -> Any:
        found = reader.fields.get(key)
        return None if found is None else found.contents()

    architecture = field("general.architecture")
    file_type = field("general.file_type")
    context = field(f"{architecture}.context_length") if architecture else None
    return GGUFMetadata(
        gguf_version=int(field("GGUF.version") or 0),
        architecture=str(architecture) if architecture is not None else None,
        name=_text(field("general.name")),
        context_length=int(context) if context is not None else None,
        chat_template=bool(field("tokenizer.chat_template")),
        quantization=file_type_name(int(file_type)) if file_type is not None else None,
        parameters=sum(int(t.n_elements) for t in reader.tensors),
        size_label=_text(field("general.size_label")),
    )


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None


def check_gguf(path: Path) -> None:
    """Cheap structural checks before llama.cpp sees the file: exists, non-empty, GGUF magic."""
    if not path.exists():
        raise ModelError(f"model file {path} does not exist")
    if not path.is_file():
        raise ModelError(f"model path {path} is not a file")
    size = path.stat().st_size
    if size == 0:
        raise ModelError(f"model file {path} is empty")
    with path.open("rb") as f:
        head = f.read(_GGUF_HEADER_BYTES)
    if head[:4] != GGUF_MAGIC:
        raise ModelError(
            f"model file {path} is not a GGUF file (starts with {head[:4]!r})",
            hint="localjudge runs GGUF models; convert others with llama.cpp's converter",
        )
    if len(head) < _GGUF_HEADER_BYTES:
        raise ModelError(f"model file {path} is truncated ({size} bytes)")
    version = struct.unpack("<I", head[4:8])[0]
    if version not in (2, 3):
        raise ModelError(f"model file {path} has unsupported GGUF version {version}")
