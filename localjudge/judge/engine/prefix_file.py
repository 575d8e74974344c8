"""The evaluated instruction prefix, kept on disk so that the next process does not evaluate it.

Every judge process starts by evaluating the fixed instructions (seconds with a 1.5B judge on a
CPU). The engine stores the KV cells of that prefix (llama.cpp's ``llama_state_seq_get_data``)
in a file beside the judge-call cache, and the next process, ``bench`` judge or Ray actor reads
them back (``llama_state_seq_set_data``) instead.

A file is trusted only when everything that determines its content matches: its name and its
header carry a key over the model file's sha256, the llama.cpp build, the judge's settings
(offload, attention kernel, AMX, window) and the prefix's exact tokens; its payload's sha256 is
in the header. A missing file is recomputed silently; a truncated, corrupt, stale or foreign one
is ignored with one line on stderr, recomputed and replaced. Writes are atomic (a temporary file
renamed into place), so a crash or a concurrent process never leaves half a file under the
name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from localjudge.canonical import canonical_json

__all__ = ["MAGIC", "PREFIX_DIR", "PrefixStore"]

#: the first bytes of every stored prefix file (and its format's version)
MAGIC = b"localjudge-prefix/1\n"
#: the directory, beside the judge-call cache, that holds the files
PREFIX_DIR = "prefixes"
#: files kept per directory: the least recently written go first
MAX_FILES = 16


class PrefixStore:
    """Stored instruction prefixes for one judge (``identity``: everything but the tokens that
    decides what the cells hold)."""

    def __init__(self, directory: Path, identity: Mapping[str, Any]) -> None:
        self.directory = directory
        self.identity = dict(identity)
        self._warned = False
        self._loaded: Path | None = None

    def key(self, tokens: Sequence[int]) -> str:
        return hashlib.sha256(
            canonical_json({"identity": self.identity, "tokens": list(tokens)}).encode()
        ).hexdigest()

    def path(self, tokens: Sequence[int]) -> Path:
        return self.directory / f"{self.key(tokens)[:40]}.kv"

    def load(self, tokens: Sequence[int]) -> bytes | None:
        """The stored cells of ``tokens``, or None (missing, or not to be trusted: said once)."""
        path = self.path(tokens)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(path, f"cannot be read ({exc.strerror or exc})")
            return None
        problem, payload = _parse(blob, self.key(tokens))
        if problem is not None:
            self._warn(path, problem)
            return None
        self._loaded = path
        return payload

    def rejected(self, why: str) -> None:
        """The engine could not use what :meth:`load` gave (it recomputes and saves anew)."""
        self._warn(self._loaded or self.directory, why)

    def save(self, tokens: Sequence[int], payload: bytes) -> None:
        """Store ``payload`` for ``tokens`` (atomically; a failure to write costs nothing but
        the next process's time)."""
        path = self.path(tokens)
        header = json.dumps(
            {
                "key": self.key(tokens),
                "n_tokens": len(tokens),
                "payload_bytes": len(payload),
                "payload_sha256": hashlib.sha256(payload).hexdigest(),
                "identity": self.identity,
            },
            sort_keys=True,
        ).encode()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as f:
                f.write(MAGIC + len(header).to_bytes(4, "little") + header + payload)
            tmp.replace(path)
            self._prune(keep=path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    def _prune(self, keep: Path) -> None:
        files = sorted(
            (p for p in self.directory.glob("*.kv") if p != keep),
            key=lambda p: p.stat().st_mtime,
        )
        for old in files[: max(0, len(files) + 1 - MAX_FILES)]:
            old.unlink(missing_ok=True)

    def _warn(self, path: Path, problem: str) -> None:
        if not self._warned:
            self._warned = True
            print(
                f"localjudge: the stored instruction prefix {path} {problem}; evaluating the "
                "instructions again and replacing it",
                file=sys.stderr,
                flush=True,
            )


def _parse(blob: bytes, key: str) -> tuple[str | None, bytes]:
    """(what is wrong with a stored file, its payload): the problem is None when it is sound."""
    if not blob.startswith(MAGIC):
        return "is not a localjudge prefix file", b""
    at = len(MAGIC)
    size = int.from_bytes(blob[at : at + 4], "little")
    try:
        header = json.loads(blob[at + 4 : at + 4 + size])
    except ValueError:
        return "has a damaged header (truncated?)", b""
    if not isinstance(header, dict) or header.get("key") != key:
        return "was made for another model, build or setting", b""
    payload = blob[at + 4 + size :]
    if len(payload) != header.get("payload_bytes"):
        return f"is truncated ({len(payload)} of {header.get('payload_bytes')} bytes)", b""
    if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
        return "is corrupt (its checksum does not match)", b""
    return None, payload
