"""The one place JSON is written compact or canonical, and the one place files are hashed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_BLOCK = 1 << 20


def compact_json(value: Any) -> str:
    """JSON without whitespace, UTF-8 text as is (no ``\\u`` escapes), NaN refused: the form the
    judge's grammar emits and every localjudge file line uses."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def canonical_json(value: Any) -> str:
    """:func:`compact_json` with sorted keys: equal values give equal text (cache keys)."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, sort_keys=True
    )


def sha256_text(text: str) -> str:
    """The hex sha256 of ``text`` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: str | Path) -> str:
    """The hex sha256 of a file's bytes, read in 1 MiB blocks; of a directory (a Hugging Face
    ``save_to_disk`` folder), the sha256 of its files' relative paths and hashes in path order."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        listing = "".join(f"{p.relative_to(path).as_posix()}\t{file_sha256(p)}\n" for p in files)
        return sha256_text(listing)
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()
