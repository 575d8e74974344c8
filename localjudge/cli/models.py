"""``localjudge models``: list, add, remove and inspect the judges localjudge can use.

A client of :mod:`localjudge.judge.models.registry` like the rest of the CLI (:mod:`localjudge.cli`
registers the group). ``localjudge models`` with no subcommand lists, as ``models list`` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


@click.group("models", invoke_without_command=True)
@click.pass_context
def models_group(ctx: click.Context) -> None:
    """List the judges localjudge can use (also `models list`), or add, remove or inspect one."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@models_group.command("list")
def list_command() -> None:
    """List the judges localjudge can use and whether each is present."""
    from localjudge.judge.models import DEFAULT_ALIAS, list_models, user_registry_path  # noqa: PLC0415

    for status in list_models():
        j = status.judge
        mark = "present" if status.present else "missing"
        default = " (default)" if j.alias == DEFAULT_ALIAS else ""
        click.echo(f"{j.alias}{default}\t{mark}\t{j.description or j.file}")
        if status.path is not None:
            click.echo(f"    {status.path}")
        if status.note:
            click.echo(f"    {status.note}")
    click.echo(f"user registry: {user_registry_path()}")


@models_group.command("add")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--alias", required=True, help="The name to give it (-m NAME).")
@click.option("--force", is_flag=True, help="Replace an alias that is already registered.")
@click.option(
    "--description", default=None, help="Shown by `models` (default: from the GGUF metadata)."
)
def add_command(path: Path, alias: str, force: bool, description: str | None) -> None:
    """Register the GGUF file PATH as NAME in the user registry, with its sha256.

    Nothing is copied: the alias points at the file, which must not change afterwards (a file
    whose sha256 no longer matches is refused at load)."""
    from localjudge.judge.models import (  # noqa: PLC0415
        add_model,
        user_registry_path,
    )

    info = add_model(path, alias, force=force, description=description)
    click.echo(f"added {alias} -> {info.path} to {user_registry_path()}")
    _print_info(info.as_dict())


@models_group.command("rm")
@click.argument("name")
def rm_command(name: str) -> None:
    """Remove the user alias NAME (built-in judges cannot be removed; the file is kept)."""
    from localjudge.judge.models import (  # noqa: PLC0415
        remove_model,
        user_registry_path,
    )

    removed = remove_model(name)
    click.echo(f"removed {name} ({removed.path or removed.file}) from {user_registry_path()}")


@models_group.command("info")
@click.argument("model")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def info_command(model: str, as_json: bool) -> None:
    """Show a judge's file and GGUF metadata: MODEL is a registered alias or a GGUF path."""
    from localjudge.judge.models import model_info  # noqa: PLC0415

    info = model_info(model).as_dict()
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        _print_info(info)


def info_lines(info: dict[str, Any]) -> list[str]:
    """``models info``'s text: one ``key: value`` line per fact."""
    from localjudge.judge.models import human_count  # noqa: PLC0415

    alias = f"{info['alias']} ({info['registry']})" if info["alias"] else "(not registered)"
    sha = info["sha256"]
    if info["sha256_ok"] is not None:
        sha += (
            " (matches the registry)"
            if info["sha256_ok"]
            else (f" (DOES NOT MATCH: the registry expects {info['expected_sha256']})")
        )
    size_label = info["size_label"] or human_count(info["parameters"])
    values = {
        "alias": alias,
        "path": info["path"],
        "file size": f"{info['size_bytes'] / 1e6:.1f} MB ({info['size_bytes']} bytes)",
        "sha256": sha,
        "gguf version": info["gguf_version"],
        "architecture": info["architecture"] or "unknown",
        "name": info["name"] or "unknown",
        "trained context": info["context_length"] or "unknown",
        "chat template": "yes" if info["chat_template"] else "no",
        "quantization": info["quantization"] or "unknown",
        "parameters": f"{info['parameters']} ({size_label})",
    }
    return [f"{key}: {value}" for key, value in values.items()]


def _print_info(info: dict[str, Any]) -> None:
    for line in info_lines(info):
        click.echo(line)
