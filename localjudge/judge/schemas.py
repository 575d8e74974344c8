"""Output schemas for the judge: strict, bounded, and with a known worst-case size.

Every judge output schema derives from :class:`StrictModel` (extra properties forbidden) and uses
bounded field types (:func:`text`, bounded lists), so :func:`worst_case_tokens` can derive the
largest number of tokens a conforming compact JSON output can take. The judge sets ``max_tokens``
to that number: an output is never cut off.

Strings exclude the characters JSON would have to escape (``"``, ``\\`` and control characters),
so a string of ``n`` characters is exactly its UTF-8 bytes between two quotes; ``ascii``
strings (reasons) take one byte per character. Every generated token carries at least one byte,
so the byte bound of the JSON text is a token bound.

At the top of :mod:`localjudge.judge`: any layer may use it (the metrics' schemas derive from
it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    create_model,
)

from localjudge.canonical import compact_json
from localjudge.errors import ConstraintError

M = TypeVar("M", bound=BaseModel)

#: characters that never need an escape in a JSON string: no quote, backslash, control char
_ANY_CHAR = r'[^"\\\x00-\x1f\x7f]'
_ASCII_CHAR = r"[ !#-\[\]-~]"  # printable ASCII without '"' and '\'
#: bytes in the UTF-8 form of the widest allowed character
_MAX_UTF8_BYTES = 4

#: the whitespace-free JSON that llguidance is asked to emit
GUIDANCE = {"whitespace_flexible": False}


class StrictModel(BaseModel):
    """Base of every judge output schema: no extra properties, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def text(max_chars: int, *, ascii_only: bool = False, min_chars: int = 1) -> Any:
    """A bounded string type for schema fields (``Annotated[str, ...]``)."""
    char = _ASCII_CHAR if ascii_only else _ANY_CHAR
    return Annotated[
        str,
        StringConstraints(
            min_length=min_chars,
            max_length=max_chars,
            pattern=f"^{char}{{{min_chars},{max_chars}}}$",
        ),
    ]


def bounded_list(item: Any, *, min_items: int, max_items: int) -> Any:
    """A bounded list type for schema fields."""
    return Annotated[list[item], Field(min_length=min_items, max_length=max_items)]


class UnboundedSchemaError(ValueError):
    """A schema has a string, list or number without an upper bound."""


#: what a budgeted schema's output may use when no number is given: the rest of the window
WINDOW = "window"
_BUDGET_KEY = "x-localjudge-budget"


def budgeted(
    schema: type[M],
    max_tokens: int | None = None,
    *,
    max_items: int | None = None,
    max_chars: int | None = None,
    min_items: int | None = None,
    min_chars: int | None = None,
    choices: Mapping[str, Sequence[int | str]] | None = None,
) -> type[M]:
    """``schema`` for the judge even though it has unbounded strings or lists (a schema we did
    not write: ragas', deepeval's). Decoding stays under the grammar, compact, with extra
    properties forbidden at every level; the output may take at most ``max_tokens`` tokens
    (None: what is left of the context window). An output that has not finished by then is a
    :class:`~localjudge.errors.OutputBudgetError`, never a cut-off value.

    ``max_items`` / ``max_chars`` cap every list / string the schema leaves unbounded, so the
    grammar closes them there: a small judge that repeats list entries stops at ``max_items``
    instead of running out of budget. ``min_items`` is the least length of every list the schema
    leaves without one (``1``: a judge cannot answer a list of verdicts with none), and
    ``min_chars`` that of every open string (``1``: no empty statement or reason).

    ``choices`` names properties whose values the schema leaves open but the prompt does not:
    ``{"attributed": (0, 1)}`` makes every property ``attributed`` (an ``int`` in ragas' model)
    one of those values, where its type admits them. The budget, the caps and the choices are
    part of the schema's JSON schema, so they are part of the call's cache key."""
    for name, value in (
        ("max_tokens", max_tokens),
        ("max_items", max_items),
        ("max_chars", max_chars),
    ):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    for low, least, high, most in (
        ("min_items", min_items, "max_items", max_items),
        ("min_chars", min_chars, "max_chars", max_chars),
    ):
        if least is not None and least < 0:
            raise ValueError(f"{low} must be at least 0, got {least}")
        if least is not None and most is not None and least > most:
            raise ValueError(f"{low} ({least}) is above {high} ({most})")
    for key, values in (choices or {}).items():
        kinds = {type(v) for v in values}
        if not values or kinds not in ({int}, {str}):
            raise ValueError(f"choices[{key!r}] must be a non-empty sequence of ints or of strings")
    budget: int | str = WINDOW if max_tokens is None else int(max_tokens)
    model: type[M] = create_model(
        schema.__name__,
        __base__=schema,
        __module__=schema.__module__,
    )
    model.__localjudge_budget__ = budget  # type: ignore[attr-defined]
    model.__localjudge_caps__ = {  # type: ignore[attr-defined]
        "maxItems": max_items,
        "maxLength": max_chars,
        "minItems": min_items,
        "minLength": min_chars,
    }
    model.__localjudge_choices__ = {k: list(v) for k, v in (choices or {}).items()}  # type: ignore[attr-defined]
    return model


def output_budget(schema: type[BaseModel]) -> int | str | None:
    """A :func:`budgeted` schema's budget (tokens, or :data:`WINDOW`); None for our own schemas,
    whose bound :func:`worst_case_tokens` derives."""
    budget: int | str | None = getattr(schema, "__localjudge_budget__", None)
    return budget


def json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema the grammar is built from: pydantic's, plus compact-whitespace control;
    for a :func:`budgeted` schema every object also forbids extra properties."""
    js = schema.model_json_schema()
    budget = output_budget(schema)
    if budget is not None:
        caps = {k: v for k, v in getattr(schema, "__localjudge_caps__", {}).items() if v}
        _restrict(js, caps, getattr(schema, "__localjudge_choices__", {}))
        js[_BUDGET_KEY] = budget
    js["x-guidance"] = dict(GUIDANCE)
    return js


#: the caps :func:`budgeted` may add, by JSON type: (upper, lower) bound keywords
_CAPPED = {"array": ("maxItems", "minItems"), "string": ("maxLength", "minLength")}


def _restrict(node: Any, caps: Mapping[str, int], choices: Mapping[str, list[int | str]]) -> None:
    """Forbid extra properties on every object; bound open arrays and strings where ``caps``
    says; narrow the properties ``choices`` names to their values."""
    if isinstance(node, list):
        for value in node:
            _restrict(value, caps, choices)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "object":
        node.setdefault("additionalProperties", False)
        props = node.get("properties", {})
        for name, values in choices.items():
            if name in props and _admits(props[name], values):
                props[name] = _choice(props[name], values)
    for key in _CAPPED.get(kind, ()) if isinstance(kind, str) else ():
        if key in caps:
            node.setdefault(key, caps[key])
    for value in node.values():
        _restrict(value, caps, choices)


def _admits(prop: Mapping[str, Any], values: list[int | str]) -> bool:
    """Whether ``prop`` is left open (a plain ``integer`` or ``string``: no enum, no bounds) and
    of the type of ``values``."""
    wanted = "integer" if type(values[0]) is int else "string"
    return prop.get("type") == wanted and set(prop) <= {"type", "title", "description", "default"}


def _choice(prop: Mapping[str, Any], values: list[int | str]) -> dict[str, Any]:
    """``prop`` narrowed to ``values`` (its title and description kept for the reader)."""
    kept = {k: v for k, v in prop.items() if k in ("title", "description")}
    return {**kept, "enum": list(values)}


def worst_case_bytes(schema: type[BaseModel]) -> int:
    """Largest size in bytes of a compact JSON document conforming to ``schema``."""
    js = schema.model_json_schema()
    return _max_bytes(js, js.get("$defs", {}), path=schema.__name__)


def worst_case_tokens(schema: type[BaseModel]) -> int:
    """Upper bound on the tokens of a conforming output, end-of-sequence token included."""
    return worst_case_bytes(schema) + 1


def _max_bytes(node: Mapping[str, Any], defs: Mapping[str, Any], path: str) -> int:  # noqa: PLR0911, PLR0912
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return _max_bytes(defs[name], defs, path)
    if "const" in node:
        return _json_len(node["const"])
    if "enum" in node:
        return max(_json_len(v) for v in node["enum"])
    for combinator in ("anyOf", "oneOf"):
        if combinator in node:
            return max(_max_bytes(sub, defs, path) for sub in node[combinator])
    kind = node.get("type")
    if kind == "object":
        if node.get("additionalProperties", True) is not False:  # JSON Schema allows by default
            raise UnboundedSchemaError(f"{path}: additional properties must be forbidden")
        props: Mapping[str, Any] = node.get("properties", {})
        inner = sum(
            _json_len(key) + 1 + _max_bytes(sub, defs, f"{path}.{key}")
            for key, sub in props.items()
        )
        return 2 + inner + max(len(props) - 1, 0)
    if kind == "array":
        prefix = node.get("prefixItems", [])
        max_items = node.get("maxItems")
        if max_items is None:
            if prefix and node.get("items", False) is False:
                max_items = len(prefix)
            else:
                raise UnboundedSchemaError(f"{path}: array without maxItems")
        sizes = [_max_bytes(sub, defs, f"{path}[{i}]") for i, sub in enumerate(prefix)]
        if max_items > len(prefix):
            rest = _max_bytes(node["items"], defs, f"{path}[]")
            sizes += [rest] * (max_items - len(prefix))
        sizes = sizes[:max_items]
        return 2 + sum(sizes) + max(len(sizes) - 1, 0)
    if kind == "string":
        max_len = node.get("maxLength")
        if max_len is None:
            raise UnboundedSchemaError(f"{path}: string without maxLength")
        per_char = 1 if node.get("pattern", "").startswith("^" + _ASCII_CHAR) else _MAX_UTF8_BYTES
        return 2 + int(max_len) * per_char
    if kind == "boolean":
        return len("false")
    if kind == "integer":
        lo, hi = node.get("minimum"), node.get("maximum")
        if lo is None or hi is None:
            raise UnboundedSchemaError(f"{path}: integer without minimum and maximum")
        return max(len(str(int(lo))), len(str(int(hi))))
    raise UnboundedSchemaError(f"{path}: unsupported schema node {dict(node)!r}")


def _json_len(value: Any) -> int:
    return len(compact_json(value).encode("utf-8"))


def parse_output(schema: type[BaseModel], raw: str) -> BaseModel:
    """Validate a judge's raw text against ``schema``: the one parse step, no repair.

    Under constrained decoding this cannot fail; when it does, the constraint was not applied,
    and the call fails loudly rather than returning a guess. The check is as strict as the
    grammar: compact JSON only, no floats (no schema has one), no type coercion.
    """
    try:
        data = json.loads(raw, parse_float=_no_float, parse_constant=_no_float)
    except ValueError as exc:
        raise ConstraintError(
            f"judge output does not match schema {schema.__name__} at <root>: invalid JSON: {exc}",
            hint="constrained decoding was not applied; the output was discarded",
        ) from exc
    if compact_json(data) != raw:
        raise ConstraintError(
            f"judge output does not match schema {schema.__name__} at <root>: not compact JSON "
            "(whitespace, escapes or repeated keys the grammar never produces)",
            hint="constrained decoding was not applied; the output was discarded",
        )
    try:
        value = schema.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise ConstraintError(
            f"judge output does not match schema {schema.__name__} at {where}: {first['msg']}",
            hint="constrained decoding was not applied; the output was discarded",
        ) from exc
    if output_budget(schema) is not None:  # the caps and choices live in the JSON schema only
        js = json_schema(schema)
        problem = _restriction_broken(js, js.get("$defs", {}), data, "")
        if problem is not None:
            where, what = problem
            raise ConstraintError(
                f"judge output does not match schema {schema.__name__} at {where or '<root>'}: "
                f"{what}",
                hint="constrained decoding was not applied; the output was discarded",
            )
    return value


def _restriction_broken(  # noqa: PLR0911 (one return per restriction it checks)
    node: Mapping[str, Any], defs: Mapping[str, Any], data: Any, where: str
) -> tuple[str, str] | None:
    """The first place where ``data`` breaks a restriction :func:`budgeted` added (an enum, a
    list or string length, an extra property), as (path, what); None when it keeps them all."""
    if "$ref" in node:
        return _restriction_broken(defs[node["$ref"].rsplit("/", 1)[-1]], defs, data, where)
    for combinator in ("anyOf", "oneOf"):
        if combinator in node:
            each = [_restriction_broken(sub, defs, data, where) for sub in node[combinator]]
            return None if None in each else each[0]
    if "enum" in node and data not in node["enum"]:
        return where, f"{data!r} is not one of {node['enum']}"
    length = _length_broken(node, data)
    if length is not None:
        return where, length
    inner: list[tuple[Mapping[str, Any], Any, str]] = []  # (schema, value, path) to check next
    if isinstance(data, list) and isinstance(node.get("items"), dict):
        inner = [(node["items"], item, _at(where, i)) for i, item in enumerate(data)]
    if isinstance(data, dict):
        props: Mapping[str, Any] = node.get("properties", {})
        extra = sorted(set(data) - set(props))
        if node.get("additionalProperties") is False and extra:
            return where, f"extra properties {extra}"
        inner = [(sub, data[key], _at(where, key)) for key, sub in props.items() if key in data]
    for sub, value, path in inner:
        found = _restriction_broken(sub, defs, value, path)
        if found is not None:
            return found
    return None


def _length_broken(node: Mapping[str, Any], data: Any) -> str | None:
    """What is wrong with the length of a string or list ``data`` under ``node``'s bounds."""
    if isinstance(data, str):
        (high_key, low_key), unit = _CAPPED["string"], "characters"
    elif isinstance(data, list):
        (high_key, low_key), unit = _CAPPED["array"], "items"
    else:
        return None
    low, high = node.get(low_key, 0), node.get(high_key, len(data))
    if low <= len(data) <= high:
        return None
    return f"{len(data)} {unit} where {low} to {high} are allowed"


def _at(where: str, key: str | int) -> str:
    return f"{where}.{key}" if where else str(key)


def _no_float(text: str) -> Any:
    raise ValueError(f"non-integer number {text}")
