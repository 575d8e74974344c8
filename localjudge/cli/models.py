"""``localjudge models``: list, add, remove and inspect the judges localjudge can use.

A client of :mod:`localjudge.judge.models.registry` like the rest of the CLI (:mod:`localjudge.cli`
registers the group). ``localjudge models`` with no subcommand lists, as ``models list`` does.
"""

from __future__ import annotations

import json
from typing import Any

import click


@click.group("models", invoke_without_command=True)
@click.pass_context
def models_group(ctx: click.Context) -> None:
    """List the judges localjudge can use (also `models list`), or add, remove or inspect one."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@models_group.command("list")
@click.option(
    "--found",
    is_flag=True,
    help="List the GGUF judges in Ollama's, LM Studio's and the Hugging Face cache's folders.",
)
@click.option("--json", "as_json", is_flag=True, help="With --found: print one JSON object.")
def list_command(found: bool = False, as_json: bool = False) -> None:
    """List the judges localjudge can use and whether each is present (--found: the GGUF judges
    other tools keep, usable as -m ollama:NAME, hf:ORG/REPO/FILE.gguf, lmstudio:P/R/FILE.gguf)."""
    if found or as_json:
        _list_found(as_json)
        return
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


def _list_found(as_json: bool) -> None:
    """``models list --found``: one line per judge (name, store, architecture, parameters,
    quantisation, size, trained context, chat template), then what was skipped and why."""
    from localjudge.judge.models import found_models, human_count, store_roots  # noqa: PLC0415

    found = found_models()
    rows = [
        {
            **meta.as_dict(),
            "gguf_name": meta.name,  # general.name; "name" is what -m takes
            "name": model.spec,
            "store": model.store,
            "path": str(model.path),
            "size_bytes": model.path.stat().st_size,
        }
        for model, meta in found.judges
    ]
    skipped = [{"name": s.spec, "where": str(s.where), "reason": s.reason} for s in found.skipped]
    if as_json:
        searched = {k: [str(r) for r in v] for k, v in found.roots.items()}
        payload = {"judges": rows, "skipped": skipped, "roots": searched}
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    for row in rows:
        params = row["size_label"] or human_count(row["parameters"])
        click.echo(
            f"{row['name']}\t{row['architecture'] or '?'}, {params} parameters, "
            f"{row['quantization'] or '?'}, {row['size_bytes'] / 1e9:.2f} GB, "
            f"ctx {row['context_length'] or '?'}, "
            f"chat template {'yes' if row['chat_template'] else 'no'}"
        )
    for row in skipped:
        click.echo(f"skipped {row['name']}: {row['reason']}")
    for store, roots in found.roots.items():
        looked = ", ".join(str(r) for r in store_roots(store))
        click.echo(f"{store}: {', '.join(str(r) for r in roots) or f'none of {looked}'}")
    if not rows:
        click.echo("no GGUF judge found; `localjudge models add PATH --alias NAME` takes any file")


@models_group.command("add")
@click.argument("path")
@click.option("--alias", required=True, help="The name to give it (-m NAME).")
@click.option("--overwrite", is_flag=True, help="Replace an alias that is already registered.")
@click.option(
    "--description", default=None, help="Shown by `models` (default: from the GGUF metadata)."
)
def add_command(path: str, alias: str, overwrite: bool, description: str | None) -> None:
    """Register the GGUF file PATH as NAME in the user registry, with its sha256. PATH may be
    a store name: ollama:qwen2.5:7b, hf:ORG/REPO/FILE.gguf[@REV], lmstudio:P/R/FILE.gguf.

    Nothing is copied: the alias points at the file, which must not change afterwards (a file
    whose sha256 no longer matches is refused at load)."""
    from localjudge.judge.models import (  # noqa: PLC0415
        add_model,
        user_registry_path,
    )

    info = add_model(path, alias, force=overwrite, description=description)
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
    """Show a judge's file and GGUF metadata: MODEL is a registered alias, a GGUF path or a
    store name (ollama:NAME, hf:ORG/REPO/FILE.gguf, lmstudio:P/R/FILE.gguf)."""
    from localjudge.judge.models import model_info  # noqa: PLC0415
    from localjudge.metrics.protocols import current_protocol  # noqa: PLC0415

    info = model_info(model).as_dict()
    info["protocol"] = current_protocol().as_json()
    info["ships"] = ships_of(info["sha256"])
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
        **({"store": f"{info['store']} ({info['store_entry']})"} if info.get("store") else {}),
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
        **({"skipped": "; ".join(info["store_notes"])} if info.get("store_notes") else {}),
        **(
            {"protocol": f"{_named(info['protocol'])}, the prompts this release asks by"}
            if info.get("protocol")
            else {}
        ),
    }
    return [f"{key}: {value}" for key, value in values.items()]


def _named(protocol: dict[str, str]) -> str:
    """A recorded protocol as one reads it: its name and short fingerprint."""
    return f"{protocol['name']} ({protocol['fingerprint'][:12]})"


def ships_of(sha256: str) -> dict[str, Any] | None:
    """What the package ships for the judge file with this sha256 (``cutoffs.json``: how its
    entry was built, and per kind the status, cut-offs, combination and why), and the kinds the
    user's ``localjudge calibrate`` replaced, and the protocol each was made under; None for a
    file the package ships nothing for."""
    from localjudge.decisions import shipped_judge, user_cutoffs, user_protocol  # noqa: PLC0415

    entry = shipped_judge(sha256)
    mine = user_cutoffs(sha256, checked=False).kinds  # shown even when a run would refuse it
    if entry is None and not mine:
        return None
    out: dict[str, Any] = entry.model_dump(mode="json") if entry is not None else {"kinds": {}}
    out["calibrated_by_you"] = mine
    made = user_protocol(sha256) if mine else None
    out["calibrated_protocol"] = None if made is None else made.as_json()
    return out


def ships_lines(ships: dict[str, Any] | None) -> list[str]:
    """``models info``'s lines on what ships: one line per kind of decision."""
    if ships is None:
        return ["ships: nothing (every decision takes the neutral cut-offs)"]
    lines = [f"ships: {ships.get('built', 'nothing built-in')}"]
    for kind, k in ships["kinds"].items():
        cuts = "" if k["cutoffs"] is None else " " + " / ".join(f"{c:.3f}" for c in k["cutoffs"])
        readings = " + ".join(k["combination"]["weights"]) if k["combination"] else "own"
        how = f"{k['status']}{cuts} ({readings})" if k["status"] != "neutral" else "neutral"
        lines.append(f"  {kind}: {how}: {k['why']}")
    if ships.get("protocol"):
        lines.append(f"  built from rows judged under protocol {_named(ships['protocol'])}")
    mine = ships.get("calibrated_protocol")
    under = f", protocol {_named(mine)}" if mine else ""
    lines += [
        f"  {k}: replaced by your own (localjudge calibrate{under})"
        for k in ships["calibrated_by_you"]
    ]
    return lines


def _print_info(info: dict[str, Any]) -> None:
    for line in [*info_lines(info), *ships_lines(info.get("ships"))]:
        click.echo(line)
