"""The judges other tools already keep on disk, used by the names those tools give them.

Owns the three store spellings of ``-m`` (``ollama:NAME[:TAG]``, ``hf:ORG/REPO/FILE.gguf[@REV]``,
``lmstudio:PUBLISHER/REPO/FILE.gguf``), where each store lives (the tool's own override, then
its documented defaults on Linux, macOS and Windows), the walk from a name to its GGUF file
(Ollama's manifest and blob, the Hugging Face cache's snapshot link, LM Studio's folder), and the
listing of every GGUF file the stores hold, naming what is skipped: projector and adapter layers,
split GGUFs, unfinished downloads, files that are not GGUF.

Pure filesystem and the standard library: nothing is downloaded, no server is asked, nothing
is copied or loaded. The judge's identity stays its file's sha256 (see ``registry``).
"""

from __future__ import annotations

import json
import os
import platform
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from localjudge.errors import ModelError

__all__ = ["STORES", "Found", "Skipped", "StoreModel", "find_models", "is_store_spec"]
__all__ += ["resolve_store", "store_roots"]

#: the prefixes of a store name; nothing else is one (``C:\\models\\x.gguf`` is a path)
STORES = ("ollama", "hf", "lmstudio")
_PREFIX = re.compile(r"(ollama|hf|lmstudio):(.+)", re.DOTALL)
_MODEL_LAYER = "application/vnd.ollama.image.model"
_SKIPPED_LAYERS = {f"application/vnd.ollama.image.{k}": k for k in ("projector", "adapter")}
_OLLAMA_HOST, _OLLAMA_NAMESPACE = "registry.ollama.ai", "library"
_SPLIT = re.compile(r"-\d{5}-of-\d{5}\.gguf$", re.IGNORECASE)
_PARTIAL = (".incomplete", ".part", ".partial", ".download", ".crdownload", "-partial")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class StoreModel:
    """A GGUF file a store names: ``store``, ``name`` as the store spells it, ``path`` (links
    followed), ``where`` (the manifest, snapshot link or file that named it) and ``digest`` (the
    sha256 the store files it under: Ollama's blobs and the Hugging Face cache's)."""

    store: str
    name: str
    path: Path
    where: Path
    digest: str | None = None
    #: layers or files of this name that are skipped (a projector)
    notes: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        """What ``-m`` takes for it: ``ollama:qwen2.5:7b``."""
        return f"{self.store}:{self.name}"


@dataclass(frozen=True)
class Skipped:
    """A store entry that is no judge: its name (``ollama:llava:7b``), where it was found (a
    file, or the store's root) and why it is skipped."""

    spec: str
    where: Path
    reason: str


@dataclass(frozen=True)
class Found:
    """The judges found, the entries skipped, and the roots searched per store (that exist)."""

    models: list[StoreModel] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    roots: dict[str, list[Path]] = field(default_factory=dict)


class _Skip(Exception):  # noqa: N818 (a reason, not an error: it becomes a Skipped or a ModelError)
    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason, self.hint = reason, hint


def is_store_spec(spec: str) -> bool:
    """Whether ``spec`` names a store's model (``ollama:``, ``hf:`` or ``lmstudio:``)."""
    return _PREFIX.fullmatch(spec) is not None


# ------------------------------------------------------------------------------- the roots


def store_roots(
    store: str,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    system: str | None = None,
) -> list[Path]:
    """Where ``store`` may keep its models, first first: the tool's override when set, else its
    documented defaults for ``system`` (``Linux``, ``Darwin``, ``Windows``); not checked."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    system = platform.system() if system is None else system
    if store == "ollama":
        if env.get("OLLAMA_MODELS"):
            return [Path(env["OLLAMA_MODELS"]).expanduser()]
        roots = [home / ".ollama" / "models"]
        if system == "Linux":  # the systemd service of the install script runs as user ollama
            roots.append(Path("/usr/share/ollama/.ollama/models"))
        return roots
    if store == "hf":
        for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
            if env.get(key):
                return [Path(env[key]).expanduser()]
        if env.get("HF_HOME"):
            return [Path(env["HF_HOME"]).expanduser() / "hub"]
        cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
        return [cache / "huggingface" / "hub"]
    if store == "lmstudio":
        return _lmstudio_roots(home)
    raise ModelError(f"unknown model store {store!r}", hint=f"stores: {', '.join(STORES)}")


def _lmstudio_roots(home: Path) -> list[Path]:
    """LM Studio's ``downloadsFolder`` setting, ``models`` in its home (``~/.lmstudio`` or where
    ``~/.lmstudio-home-pointer`` says), then the older ``~/.cache/lm-studio/models``."""
    pointed = _read(home / ".lmstudio-home-pointer").strip()
    lm_home = Path(pointed).expanduser() if pointed else home / ".lmstudio"
    try:
        settings = json.loads(_read(lm_home / "settings.json") or "{}")
    except ValueError:
        settings = None
    folder = settings.get("downloadsFolder") if isinstance(settings, dict) else None
    roots = [Path(folder).expanduser()] if isinstance(folder, str) and folder else []
    roots += [lm_home / "models", home / ".cache" / "lm-studio" / "models"]
    return list(dict.fromkeys(roots))


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except OSError:
        return ""


# ---------------------------------------------------------------------------- resolution


def resolve_store(spec: str, env: Mapping[str, str] | None = None) -> StoreModel:
    """The GGUF file a store name leads to. Raises :class:`ModelError` naming the store roots
    searched and what was found there, for a name that leads nowhere or to no single GGUF file."""
    match = _PREFIX.fullmatch(spec)
    if match is None:
        raise ModelError(f"{spec!r} is not a store name", hint="ollama:, hf: or lmstudio:")
    store, name = match.group(1), match.group(2).strip()
    roots = store_roots(store, env)
    walk = {"ollama": _ollama, "hf": _hf, "lmstudio": _lmstudio}[store]
    first: _Skip | None = None
    for root in roots:
        got = _attempt(partial(walk, root, name))
        if isinstance(got, StoreModel):
            return got
        first = first or got
    searched = " or ".join(str(r) for r in roots)
    if first is not None:
        raise ModelError(f"{store}:{name}: {first.reason}", hint=first.hint or f"in {searched}")
    found = [m.spec for m in find_models(env, stores=(store,)).models]
    listed = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "") if found else "none"
    raise ModelError(
        f"{store}:{name} is not in {searched}",
        hint=f"found there: {listed} (`localjudge models list --found`)",
    )


def _ollama_parts(name: str) -> tuple[str, str, str, str]:
    """``[host/][namespace/]model[:tag]`` as Ollama reads it: host, namespace, model, tag."""
    if "@" in name:
        raise _Skip("a digest is not a name here", "name the model by its tag: ollama:NAME:TAG")
    base, tag = name, "latest"
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        base, tag = name[:colon], name[colon + 1 :]
    parts = base.split("/")
    if len(parts) == 1:
        parts = [_OLLAMA_HOST, _OLLAMA_NAMESPACE, *parts]
    elif len(parts) == 2:
        parts = [_OLLAMA_HOST, *parts]
    if len(parts) != 3 or not all(_plain_part(p) for p in [*parts, tag]):
        raise _Skip("is not an Ollama name", "spell it as Ollama does: qwen2.5:7b, user/model")
    return parts[0], parts[1], parts[2], tag


def _plain_part(part: str) -> bool:
    return bool(part) and part not in (".", "..") and "\\" not in part


def _ollama_name(host: str, namespace: str, model: str, tag: str) -> str:
    """How Ollama shows a name: the default host and namespace left out."""
    if host != _OLLAMA_HOST:
        return f"{host}/{namespace}/{model}:{tag}"
    return f"{model}:{tag}" if namespace == _OLLAMA_NAMESPACE else f"{namespace}/{model}:{tag}"


def _ollama(root: Path, name: str) -> StoreModel:
    parts = _ollama_parts(name)
    manifest = _case_insensitive(root / "manifests", parts)
    if manifest is None:
        raise FileNotFoundError(name)
    stored = manifest.relative_to(root / "manifests").parts  # the name as it was pulled
    return _ollama_manifest(root, manifest, _ollama_name(*stored))


def _case_insensitive(base: Path, parts: tuple[str, ...]) -> Path | None:
    """``base/parts...`` if a file, each part matched regardless of case (as Ollama does)."""
    path = base
    for part in parts:
        name = part
        if not (path / part).exists():
            try:
                same = [p.name for p in path.iterdir() if p.name.lower() == part.lower()]
            except OSError:
                return None
            name = same[0] if len(same) == 1 else part
        path = path / name
    return path if path.is_file() else None


def _ollama_manifest(root: Path, manifest: Path, name: str) -> StoreModel:
    try:
        layers = json.loads(manifest.read_text("utf-8"))["layers"]
        kinds = [(str(layer["mediaType"]), str(layer["digest"])) for layer in layers]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _Skip(f"manifest {manifest} cannot be read ({exc})") from None
    notes = []
    for media, digest in kinds:
        what = _SKIPPED_LAYERS.get(media)
        if what == "adapter":
            raise _Skip(
                f"manifest {manifest} adds an adapter layer ({digest}), which localjudge does "
                "not apply: the judge would not be the model Ollama runs",
                "use a model without an adapter, or a GGUF with the adapter merged",
            )
        if what is not None:
            notes.append(f"{what} layer {digest} skipped (not a judge)")
    models = [digest for media, digest in kinds if media == _MODEL_LAYER]
    if len(models) != 1:
        raise _Skip(f"manifest {manifest} has {len(models)} model layers, expected one")
    digest = models[0]
    if not digest.startswith("sha256:") or not _HEX64.fullmatch(digest[7:]):
        raise _Skip(f"manifest {manifest} names the model layer {digest!r}, not a sha256")
    hexdigest = digest[7:]
    blobs = root / "blobs"
    for blob in (blobs / f"sha256-{hexdigest}", blobs / f"sha256:{hexdigest}"):
        if blob.is_file():
            _check_magic(blob)
            return StoreModel("ollama", name, blob, manifest, hexdigest, tuple(notes))
    if pending := sorted(blobs.glob(f"sha256-{hexdigest}-partial*")):
        raise _Skip(
            f"its model blob is a download that did not finish ({pending[0].name})",
            f"finish it with `ollama pull {name}`",
        )
    raise _Skip(
        f"manifest {manifest} names blob sha256-{hexdigest}, which is not in {blobs}",
        f"`ollama pull {name}` brings it back",
    )


def _check_magic(path: Path) -> None:
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise _Skip(f"{path} cannot be read ({exc.strerror})") from None
    if head != b"GGUF":
        raise _Skip(f"{path} is not a GGUF file (starts with {head!r})")


def _check_name(file: str) -> None:
    """Refuse a split GGUF's part, a projector and a download that did not finish, by name."""
    if _SPLIT.search(file):
        raise _Skip(
            f"{file} is one part of a split GGUF",
            "join the parts with llama.cpp's `llama-gguf-split --merge` and pass the file",
        )
    if "mmproj" in file.lower():
        raise _Skip(f"{file} is a multimodal projector, not a judge")
    if file.lower().endswith(_PARTIAL):
        raise _Skip(f"{file} is a download that did not finish")
    if not file.lower().endswith(".gguf"):
        raise _Skip(f"{file} is not a .gguf file", "name a .gguf file in the store")


def _hf_parts(name: str) -> tuple[str, str, str, str | None]:
    """``ORG/REPO/FILE.gguf[@REV]`` (or ``ORG/REPO@REV/FILE.gguf``): org, repo, file, rev."""
    rev = None
    parts = name.split("/")
    if len(parts) >= 3 and "@" in parts[-1]:
        parts[-1], rev = parts[-1].rsplit("@", 1)
    elif len(parts) >= 3 and "@" in parts[1]:
        parts[1], rev = parts[1].split("@", 1)
    if len(parts) < 3 or not all(_plain_part(p) for p in parts) or rev == "":
        raise _Skip("is not a Hugging Face file name", "spell it hf:ORG/REPO/FILE.gguf[@REV]")
    return parts[0], parts[1], "/".join(parts[2:]), rev


def _hf(root: Path, name: str) -> StoreModel:
    org, repo, file, rev = _hf_parts(name)
    _check_name(file)
    repo_dir = root / f"models--{org}--{repo}"
    if not repo_dir.is_dir():
        raise FileNotFoundError(name)
    snapshot = _hf_snapshot(repo_dir, rev)
    link = snapshot / file
    spelled = f"{org}/{repo}/{file}" + (f"@{rev}" if rev else "")
    if not link.is_file():
        if link.is_symlink():
            raise _Skip(_unfinished(link) or f"{link} is a link to a missing file")
        others = [s.name[:12] for s in _snapshots(repo_dir) if (s / file).is_file()]
        raise _Skip(
            f"{file} is not in snapshot {snapshot}",
            f"snapshots that hold it: {', '.join(others)} (add @REV)" if others else "",
        )
    path = link.resolve()
    _check_magic(path)
    digest = path.name if _HEX64.fullmatch(path.name) else None
    return StoreModel("hf", spelled, path, link, digest)


def _unfinished(link: Path) -> str:
    """Why a snapshot link leads nowhere: its blob's download did not finish, or ''."""
    target = Path(os.path.realpath(link))
    pending = target.with_name(target.name + ".incomplete")
    return f"its blob's download did not finish ({pending.name})" if pending.exists() else ""


def _snapshots(repo_dir: Path) -> list[Path]:
    try:
        return sorted(p for p in (repo_dir / "snapshots").iterdir() if p.is_dir())
    except OSError:
        return []


def _hf_snapshot(repo_dir: Path, rev: str | None) -> Path:
    """The snapshot ``rev`` names (a ref such as ``main``, or a commit hash or its start);
    without one, the one ``refs/main`` names, or the only one there is."""
    want = rev or "main"
    ref = repo_dir / "refs" / want
    if ref.is_file():
        return repo_dir / "snapshots" / ref.read_text("utf-8").strip()
    snapshots = _snapshots(repo_dir)
    if rev is None and len(snapshots) == 1:
        return snapshots[0]
    matching = [s for s in snapshots if rev and s.name.startswith(rev)]
    if len(matching) == 1:
        return matching[0]
    held = ", ".join(s.name[:12] for s in snapshots) or "none"
    raise _Skip(f"no snapshot {want!r} in {repo_dir}", f"snapshots there: {held}")


def _lmstudio(root: Path, name: str) -> StoreModel:
    parts = name.split("/")
    if len(parts) < 3 or not all(_plain_part(p) for p in parts):
        raise _Skip("is not an LM Studio file name", "spell it lmstudio:PUBLISHER/REPO/FILE.gguf")
    _check_name(parts[-1])
    path = root.joinpath(*parts)
    if not path.is_file():
        if any(path.with_name(path.name + s).exists() for s in _PARTIAL):
            raise _Skip(f"{path.name} is a download that did not finish")
        raise FileNotFoundError(name)
    real = path.resolve()
    _check_magic(real)
    return StoreModel("lmstudio", name, real, path)


# ------------------------------------------------------------------------------- listing


def find_models(env: Mapping[str, str] | None = None, stores: tuple[str, ...] = STORES) -> Found:
    """Every GGUF judge the stores hold (each file once per name), and every entry skipped with
    its reason. Reads manifests, links and four bytes of each file; hashes nothing."""
    found = Found()
    for store in stores:
        roots = [r for r in dict.fromkeys(store_roots(store, env)) if _is_dir(r)]
        found.roots[store] = roots
        for root in roots:
            for name, entry in _entries(store, root):
                got = _attempt(entry)
                if isinstance(got, StoreModel):
                    found.models.append(got)
                elif got is not None:
                    found.skipped.append(Skipped(f"{store}:{name}", root, got.reason))
    return found


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a folder on the way is closed to this user
        return False


def _attempt(walk: Callable[[], StoreModel]) -> StoreModel | _Skip | None:
    """What ``walk`` finds: the model, why it is skipped, or None when it names nothing (or a
    folder on the way cannot be read: the Linux service's store is often closed to users)."""
    try:
        return walk()
    except _Skip as skip:
        return skip
    except OSError:
        return None


_Entries = Iterator[tuple[str, Callable[[], StoreModel]]]


def _entries(store: str, root: Path) -> _Entries:
    if store == "ollama":
        manifests = root / "manifests"
        for file in sorted(p for p in manifests.rglob("*") if p.is_file()):
            parts = file.relative_to(manifests).parts
            if len(parts) != 4 or any(p.startswith(".") for p in parts):
                continue
            name = _ollama_name(*parts)
            yield name, partial(_ollama_manifest, root, file, name)
    elif store == "hf":
        for repo_dir in sorted(root.glob("models--*--*")):
            yield from _hf_entries(root, repo_dir)
    else:
        for file in sorted(root.glob("*/*/*")):
            if file.name.lower().endswith(".gguf") or file.name.lower().endswith(_PARTIAL):
                name = "/".join(file.relative_to(root).parts)
                yield name, partial(_lmstudio, root, name)


def _hf_entries(root: Path, repo_dir: Path) -> _Entries:
    org, repo = repo_dir.name.split("--", 2)[1:]
    snapshots = _snapshots(repo_dir)
    only = snapshots[0].name if len(snapshots) == 1 else ""
    main = _read(repo_dir / "refs" / "main").strip() or only  # what a name without @REV gets
    for snapshot in snapshots:
        pinned = "" if snapshot.name == main else f"@{snapshot.name}"
        for link in sorted(snapshot.rglob("*.gguf")):
            name = f"{org}/{repo}/{link.relative_to(snapshot).as_posix()}{pinned}"
            yield name, partial(_hf, root, name)
    if "gguf" in repo.lower():  # which file a blob is, only its finished link says
        for blob in sorted((repo_dir / "blobs").glob("*.incomplete")):
            yield f"{org}/{repo} blob {blob.name}", partial(_hf, root, f"{org}/{repo}/{blob.name}")
