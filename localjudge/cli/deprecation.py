"""Old option spellings, kept working for one release after they are renamed.

Each is a hidden option (not in ``--help``) whose use prints one line on stderr that names the
spelling used, as the user gave it (the option, its ``LOCALJUDGE_<COMMAND>_<OPTION>`` variable
or its config key), the command, and the spelling to use instead::

    localjudge: --force is deprecated for 'diff'; use --by-id

The command reads the old option's value beside the new one's (:func:`either`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

F = TypeVar("F", bound=Callable[..., Any])


def deprecated_option(
    old: str, new: str, name: str, *, note: str = "", **attrs: Any
) -> Callable[[F], F]:
    """A hidden option spelled ``old`` (passed to the command as ``name``) that, when used,
    prints one line saying that ``new``, an option of the same command, replaces it; ``note``
    ends the line in parentheses. ``attrs`` are Click's (``is_flag=True``, ``type=...``) and
    should match the new option's."""

    def warn(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if _given(value):
            click.echo(deprecation_line(ctx, param, new, note), err=True)
        return value

    return click.option(
        old, name, hidden=True, callback=warn, help=f"Deprecated spelling of {new}.", **attrs
    )


def deprecation_line(ctx: click.Context, param: click.Parameter, new: str, note: str = "") -> str:
    """The line saying that ``param`` is deprecated for ``ctx``'s command in favour of ``new``,
    in the form the value was given: an option, an environment variable or a config key."""
    old = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    source = ctx.get_parameter_source(str(param.name))
    if source == ParameterSource.ENVIRONMENT and isinstance(param, click.Option):
        replacement = _option(ctx, new)
        old = str(param.envvar)
        new = str(replacement.envvar) if replacement is not None else new
    elif source == ParameterSource.DEFAULT_MAP:
        old, new = f"the config key {old[2:]!r}", repr(new.lstrip("-"))
    tail = f" ({note})" if note else ""
    return f"localjudge: {old} is deprecated for {_command(ctx)!r}; use {new}{tail}"


def _command(ctx: click.Context) -> str:
    """The command as a user types it after ``localjudge`` (``models add``)."""
    names: list[str] = []
    while ctx.parent is not None:
        names.insert(0, str(ctx.command.name))
        ctx = ctx.parent
    return " ".join(names) or str(ctx.command.name)


def either(new: Any, old: Any) -> Any:
    """The value of a renamed option: the new spelling's when it was given, else the old one's."""
    return new if _given(new) else old


def _given(value: Any) -> bool:
    """Whether an option's value says it was used (a flag set, a value, a repeated option's
    items)."""
    return value is not None and value is not False and value != ()


def _option(ctx: click.Context, spelling: str) -> click.Option | None:
    """The command's option that ``spelling`` names."""
    for param in ctx.command.params:
        if isinstance(param, click.Option) and spelling in param.opts:
            return param
    return None
