"""The three stores' layouts built on disk, as Ollama, the Hugging Face cache and LM Studio
leave them, around any GGUF file (a tiny header in the unit tests, the bundled SmolLM2 in the
real-model ones). A file is hard-linked into place (copied only where links cannot be made),
never read into memory."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

from localjudge.canonical import file_sha256

#: the smallest valid GGUF file: magic, version 3, no tensor, no metadata
GGUF_HEADER = b"GGUF" + struct.pack("<IQQ", 3, 0, 0)
MODEL_LAYER = "application/vnd.ollama.image.model"


def tiny_gguf(path: Path, tag: str = "") -> Path:
    """A GGUF header, followed by ``tag`` so that two files differ in their sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(GGUF_HEADER + tag.encode())
    return path


def place(source: Path, target: Path) -> Path:
    """``target`` as a hard link to ``source`` (a copy across file systems); kept when it is
    there already (two names of one file share a blob)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        return target
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return target


def ollama_model(
    root: Path,
    parts: tuple[str, str, str, str],
    model: Path,
    *,
    extra_layers: tuple[tuple[str, bytes], ...] = (),
    blob: bool = True,
) -> Path:
    """An Ollama model: the blob ``blobs/sha256-<digest>`` and the manifest
    ``manifests/HOST/NAMESPACE/MODEL/TAG`` whose model layer names it; ``extra_layers`` are
    (media type suffix, content) pairs written as blobs too (``projector``, ``adapter``)."""
    digest = file_sha256(model)
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    if blob:
        place(model, root / "blobs" / f"sha256-{digest}")
    layers = [{"mediaType": MODEL_LAYER, "digest": f"sha256:{digest}", "size": 1}]
    for kind, content in extra_layers:
        extra = hashlib.sha256(content).hexdigest()
        (root / "blobs" / f"sha256-{extra}").write_bytes(content)
        layers.append(
            {"mediaType": f"application/vnd.ollama.image.{kind}", "digest": f"sha256:{extra}"}
        )
    manifest = root.joinpath("manifests", *parts)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    config = {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "x"}
    manifest.write_text(json.dumps({"schemaVersion": 2, "config": config, "layers": layers}))
    return manifest


def hf_file(
    root: Path,
    repo: str,
    file: str,
    model: Path,
    *,
    commit: str = "a" * 40,
    main: bool = True,
    finished: bool = True,
) -> Path:
    """A file of the Hugging Face cache: ``models--ORG--REPO/blobs/<sha256>``, the snapshot link
    ``snapshots/<commit>/FILE`` to it (relative, as huggingface_hub makes it) and, when ``main``,
    ``refs/main`` naming the commit. Unfinished: only ``blobs/<sha256>.incomplete``, no link."""
    org, name = repo.split("/")
    repo_dir = root / f"models--{org}--{name}"
    digest = file_sha256(model)
    if not finished:
        return place(model, repo_dir / "blobs" / f"{digest}.incomplete")
    place(model, repo_dir / "blobs" / digest)
    link = repo_dir / "snapshots" / commit / file
    link.parent.mkdir(parents=True, exist_ok=True)
    up = "/".join([".."] * (len(Path(file).parts) + 1))
    link.symlink_to(f"{up}/blobs/{digest}")
    if main:
        (repo_dir / "refs").mkdir(exist_ok=True)
        (repo_dir / "refs" / "main").write_text(commit)
    return link


def lmstudio_file(root: Path, name: str, model: Path) -> Path:
    """LM Studio's ``PUBLISHER/REPO/FILE.gguf`` in its models folder."""
    return place(model, root / name)
