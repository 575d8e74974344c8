"""The one place JSON is written compact or canonical, JSON files are written and read back
(atomically, with errors that name the file), and files are hashed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localjudge.errors import DataError, DiskFullError, is_disk_full

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


def write_json(path: Path, value: Mapping[str, Any]) -> Path:
    """Write ``value`` as indented JSON atomically (a temporary file renamed over ``path``: a
    reader never sees half of it); a full disk is a :class:`~localjudge.errors.DiskFullError`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(
            json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n", "utf-8"
        )
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFullError(str(path)) from exc
        raise
    tmp.replace(path)
    return path


def read_json(path: Path) -> Any:
    """A JSON file's value; an unreadable one is a :class:`~localjudge.errors.DataError`."""
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc}") from exc


def read_jsonl(path: Path) -> list[tuple[dict[str, Any], str]]:
    """A JSONL file's objects, each with where it is (``path line N``); blank lines skipped,
    anything but a JSON object per line a :class:`~localjudge.errors.DataError`."""
    rows: list[tuple[dict[str, Any], str]] = []
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                where = f"{path} line {number}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"cannot read {where}: {exc}") from exc
                if not isinstance(obj, dict):
                    raise DataError(f"{where}: expected a JSON object")
                rows.append((obj, where))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc}") from exc
    return rows
