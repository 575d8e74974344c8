"""Option values from a config file and the environment, for ``eval``, ``bench`` and
``calibrate``.

Precedence, highest first: the command line, ``LOCALJUDGE_<COMMAND>_<OPTION>`` environment
variables (``LOCALJUDGE_EVAL_CTX_SIZE=4096``, ``LOCALJUDGE_BENCH_MODEL="a b"``: the option's first
long name, upper-cased, dashes as underscores; options that repeat take whitespace-separated
values), the config file, the option's own default. Click resolves it (``envvar`` per option,
``default_map`` from the file) and records where each value came from, which
``--show-config`` prints.

The file is ``--config PATH``, or else the first of ``localjudge.toml`` or a ``pyproject.toml``
with a ``[tool.localjudge]`` table found in the current directory or one of its parents
(``localjudge.toml`` first in each directory). Its top-level keys apply to every command that has
the option; a ``[eval]``, ``[bench]`` or ``[calibrate]`` table (``[tool.localjudge.eval]`` in
``pyproject.toml``) to that command, over the top level. Keys are the options' long names
(``ctx-size`` or ``ctx_size``, ``metric``, ``fail-under``); an option that repeats takes a list, and
``fail-under`` and ``map`` a table too (``fail-under = {recall = 0.8}``). An unknown key is a
usage error that names the key and the file.

The command-specific variables never collide with the variables localjudge reads itself
(``LOCALJUDGE_CACHE_DIR``, ``LOCALJUDGE_DEBUG``, ``LOCALJUDGE_IN_PROCESS``,
``LOCALJUDGE_MAX_RECORD_BYTES``, ``LOCALJUDGE_MODELS``, ``LOCALJUDGE_AMX``): every one of
them has a command name after the prefix.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

__all__ = [
    "CONFIG_NAME",
    "ENV_PREFIX",
    "ConfigFile",
    "ConfiguredCommand",
    "Resolved",
    "config_defaults",
    "env_name",
    "find_config",
    "read_config",
]

CONFIG_NAME = "localjudge.toml"
PYPROJECT = "pyproject.toml"
ENV_PREFIX = "LOCALJUDGE"
#: the parameters a file or a variable never sets
_OWN = ("config", "show_config", "help")
_TOML_HINT = "Python 3.11 reads TOML itself; on 3.10 install tomli (pip install tomli)"


@dataclass(frozen=True)
class ConfigFile:
    """A config file's localjudge settings: ``values`` are the shared (top-level) keys,
    ``commands`` each command's table."""

    path: Path
    #: where the settings sit in the file: "" (localjudge.toml) or "tool.localjudge"
    table: str
    values: dict[str, Any] = field(default_factory=dict)
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)

    def where(self, command: str | None) -> str:
        """The file and table a key came from, as ``--show-config`` prints it."""
        table = ".".join(t for t in (self.table, command) if t)
        return f"{self.path} [{table}]" if table else str(self.path)


def _toml(path: Path) -> dict[str, Any]:
    """A TOML file's content: ``tomllib`` (Python 3.11+), else ``tomli`` if installed."""
    reader: Any = None
    for name in ("tomllib", "tomli"):
        with contextlib.suppress(ImportError):
            reader = importlib.import_module(name)
            break
    if reader is None:
        raise click.UsageError(f"cannot read {path}: {_TOML_HINT}")
    try:
        with path.open("rb") as f:
            return dict(reader.load(f))
    except OSError as exc:
        raise click.UsageError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except reader.TOMLDecodeError as exc:
        raise click.UsageError(f"config file {path} is not valid TOML: {exc}") from None


def _pyproject_has_table(path: Path) -> bool:
    """Whether a pyproject.toml holds ``[tool.localjudge]`` (a cheap text check first, so a
    pyproject without it is never parsed)."""
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return False
    if "localjudge" not in text:
        return False
    tool = _toml(path).get("tool")
    return isinstance(tool, dict) and "localjudge" in tool


def find_config(start: Path) -> Path | None:
    """The config file for a run started in ``start``: ``localjudge.toml`` or a
    ``pyproject.toml`` with ``[tool.localjudge]``, in ``start`` or its nearest parent that has
    one (None: no file)."""
    for directory in (start, *start.parents):
        own = directory / CONFIG_NAME
        if own.is_file():
            return own
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _pyproject_has_table(pyproject):
            return pyproject
    return None


def read_config(path: Path, commands: Sequence[str]) -> ConfigFile:
    """The localjudge settings of ``path`` (its ``[tool.localjudge]`` table for a
    ``pyproject.toml``); a table for a command not in ``commands`` is an unknown key."""
    data = _toml(path)
    table = ""
    if path.name == PYPROJECT:
        table = "tool.localjudge"
        tool = data.get("tool", {})
        data = tool.get("localjudge", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise click.UsageError(f"[tool.localjudge] in {path} is not a table")
    values: dict[str, Any] = {}
    own: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key in commands and isinstance(value, dict):
            own[key] = value
        else:
            values[key] = value
    return ConfigFile(path, table, values, own)


def env_name(command: str, param: click.Option) -> str:
    """The environment variable of one option: ``LOCALJUDGE_<COMMAND>_<OPTION>``."""
    name = _primary(param).lstrip("-")
    return f"{ENV_PREFIX}_{command}_{name}".upper().replace("-", "_")


def _primary(param: click.Option) -> str:
    """The option's first long name (``--ctx-size`` of ``-c/--ctx-size/--n-ctx``)."""
    return next((o for o in param.opts if o.startswith("--")), param.opts[0])


def _keys(param: click.Option) -> set[str]:
    """The config keys of an option: each long name, with dashes or underscores."""
    names = [o[2:] for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
    return {n.replace("_", "-") for n in names}


def _configurable(command: click.Command) -> dict[str, click.Option]:
    """Key (dashed long name) -> option, for the options a file may set."""
    out: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in _OWN:
            for key in _keys(param):
                out[key] = param
    return out


def _value(param: click.Option, value: Any, where: str, key: str) -> Any:
    """A file's value as the option takes it: a list for an option that repeats (a table
    becomes ``KEY=VALUE`` items), one value otherwise."""
    if param.multiple:
        if isinstance(value, dict):
            return [f"{k}={v}" for k, v in value.items()]
        return list(value) if isinstance(value, list) else [value]
    if isinstance(value, (list, dict)):
        raise click.UsageError(f"{key!r} in {where} takes one value, got {value!r}")
    return value


def config_defaults(
    command: click.Command, config: ConfigFile, siblings: Sequence[click.Command] = ()
) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``default_map`` a config file gives ``command`` and, per parameter, where its value
    came from (the file and table). A top-level key may name an option of any of ``siblings``
    (the other configurable commands); a command's table only its own options."""
    name = str(command.name)
    mine = _configurable(command)
    names = sorted({name, *(str(c.name) for c in siblings)})
    every = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    shared = set(mine).union(*(_configurable(c) for c in siblings))
    defaults: dict[str, Any] = {}
    origins: dict[str, str] = {}
    tables: list[tuple[str | None, Mapping[str, Any], set[str]]] = [
        (None, config.values, shared),
        (name, config.commands.get(name, {}), set(mine)),
    ]
    for table, values, allowed in tables:  # the command's own table last: it wins
        where = config.where(table)
        for key, value in values.items():
            dashed = key.replace("_", "-")
            if dashed not in allowed:
                known = sorted({_primary(p)[2:] for p in mine.values() if not p.hidden})
                raise click.UsageError(
                    f"unknown key {key!r} in {where}: expected an option of "
                    f"{'localjudge ' + name if table else every} "
                    f"({', '.join(known)})"
                )
            param = mine.get(dashed)
            if param is None:  # another command's option at the top level
                continue
            defaults[str(param.name)] = _value(param, value, where, key)
            origins[str(param.name)] = where
    return defaults, origins


@dataclass(frozen=True)
class Resolved:
    """One option's effective value and where it came from."""

    option: str
    value: Any
    source: str


def _source(ctx: click.Context, param: click.Parameter, origins: Mapping[str, str]) -> str:
    source = ctx.get_parameter_source(str(param.name))
    if source == ParameterSource.COMMANDLINE:
        return "command line"
    if source == ParameterSource.ENVIRONMENT and isinstance(param, click.Option):
        return f"env {param.envvar}"
    if source == ParameterSource.DEFAULT_MAP:
        where = origins.get(str(param.name))
        return f"config {where}" if where is not None else "default map"
    return "default"


def resolved(ctx: click.Context) -> list[Resolved]:
    """Every option of the command in ``ctx`` (and its arguments), its value and its source; a
    hidden option only when something set it."""
    origins: Mapping[str, str] = ctx.meta.get(_ORIGINS, {})
    out = []
    for param in ctx.command.params:
        if param.name in _OWN or param.name is None:
            continue
        unset = ctx.get_parameter_source(param.name) in (None, ParameterSource.DEFAULT)
        if isinstance(param, click.Option) and param.hidden and unset:
            continue
        label = _primary(param) if isinstance(param, click.Option) else param.human_readable_name
        out.append(Resolved(label, ctx.params.get(param.name), _source(ctx, param, origins)))
    return out


def _shown(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return "null" if value is None else str(value)


def _threads() -> str:
    from localjudge.judge.llama import default_threads  # noqa: PLC0415 (only for --show-config)

    return f"{default_threads()} (the physical cores this process may use)"


def _model() -> str:
    from localjudge.judge.models import DEFAULT_ALIAS  # noqa: PLC0415

    return f"{DEFAULT_ALIAS} (the default judge)"


def _cache() -> str:
    from localjudge.judge.cache import default_cache_path  # noqa: PLC0415

    return str(default_cache_path())


def _parallel() -> str:
    from localjudge.judge.engine import DEFAULT_PARALLEL  # noqa: PLC0415

    return str(DEFAULT_PARALLEL)


#: what a run uses for an option left unset (null), where the run decides it: shown after the
#: null by --show-config, so it prints the value a run would use
_RUN_DEFAULTS: dict[str, Callable[[], str]] = {
    "--threads": _threads,
    "--model": _model,
    "--cache": _cache,
    "--parallel": _parallel,
}


_ORIGINS = "localjudge.cli.config.origins"
_FILE = "localjudge.cli.config.file"


def _load_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """``--config``'s callback (eager: it runs before every other option is read): find and
    read the file, and hand its values to Click as the command's ``default_map``."""
    command = ctx.command
    parent = ctx.parent.command if ctx.parent is not None else None
    group = parent.commands if isinstance(parent, click.Group) else {}
    siblings = [c for c in group.values() if isinstance(c, ConfiguredCommand) and c is not command]
    path = value if value is not None else find_config(Path.cwd())
    ctx.meta[_FILE] = path
    if path is None:
        return value
    config = read_config(path, [str(command.name), *(str(c.name) for c in siblings)])
    defaults, origins = config_defaults(command, config, siblings)
    for other in siblings:  # a mistake in another command's table shows up now too
        config_defaults(other, config, [command, *siblings])
    options = {p.name: p for p in command.params if isinstance(p, click.Option)}
    for name, given in defaults.items():
        _check(ctx, options[name], given, origins[name])
    ctx.default_map = {**defaults, **(ctx.default_map or {})}
    ctx.meta[_ORIGINS] = origins
    return value


def _check(ctx: click.Context, param: click.Option, value: Any, where: str) -> None:
    """A file's value that the option's type refuses is a usage error naming the file."""
    try:
        param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        key = _primary(param)[2:]
        raise click.UsageError(f"bad {key!r} in {where}: {exc.message}") from None


class ConfiguredCommand(click.Command):
    """A command whose options a config file and ``LOCALJUDGE_<COMMAND>_<OPTION>`` variables
    can set; it adds ``--config PATH`` and ``--show-config``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(
            click.Option(
                ["--config", "config"],
                type=click.Path(path_type=Path, dir_okay=False, exists=True),
                default=None,
                is_eager=True,
                expose_value=True,
                callback=_load_config,
                help=f"Config file (default: the nearest {CONFIG_NAME}, or pyproject.toml with "
                "[tool.localjudge], here or in a parent directory).",
            )
        )
        self.params.append(
            click.Option(
                ["--show-config", "show_config"],
                is_flag=True,
                help="Print each option's effective value and its source (command line, env, "
                "config file, default), then exit.",
            )
        )
        for param in self.params:
            if isinstance(param, click.Option) and param.name not in _OWN:
                param.envvar = env_name(str(self.name), param)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--show-config" not in args:
            return super().parse_args(ctx, args)
        # --show-config needs no arguments: it only shows what a run would use
        required = [p for p in self.params if isinstance(p, click.Argument) and p.required]
        for p in required:
            p.required = False
        try:
            return super().parse_args(ctx, args)
        finally:
            for p in required:
                p.required = True

    def invoke(self, ctx: click.Context) -> Any:
        show = ctx.params.pop("show_config", False)
        ctx.params.pop("config", None)
        if show:
            path = ctx.meta.get(_FILE)
            click.echo(f"config file: {path if path is not None else '(none found)'}")
            rows = resolved(ctx)
            width = max(len(r.option) for r in rows)
            for r in rows:
                shown = _shown(r.value)
                no_cache = r.option == "--cache" and ctx.params.get("no_cache")
                if r.value is None and r.option in _RUN_DEFAULTS and not no_cache:
                    shown += f" -> {_RUN_DEFAULTS[r.option]()}"
                click.echo(f"{r.option:<{width}}  {shown}  ({r.source})")
            ctx.exit(0)
        return super().invoke(ctx)
