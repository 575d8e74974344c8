"""The evaluation item, :class:`Item`: a record as the metrics read it, with ragas field names,
Mastra aliases, and per-metric field checks.

An :class:`Item` keeps the raw values it was given; the checks happen when a metric asks for a
field, so a wrong value in a field one metric does not use never costs another metric its score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from localjudge.errors import InvalidItemError

#: the fields SPEC.md defines, in ragas spelling
FIELDS = ("user_input", "retrieved_contexts", "reference", "response")
#: Mastra's names for the same fields
ALIASES: Mapping[str, str] = {
    "input": "user_input",
    "output": "response",
    "context": "retrieved_contexts",
}


@dataclass(frozen=True)
class Item:
    """One evaluation item. ``index`` is its 0-based position in the input; ``id`` is the
    record's own id or, when it has none, ``"#<index>"``."""

    id: str
    index: int
    values: Mapping[str, Any]
    #: where the data holds a field under another name or path (``--map``): field -> source
    sources: Mapping[str, str] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        """Whether the field is present and not null/empty (a cheap presence test)."""
        value = self.values.get(name)
        return value not in (None, "", [])

    def text(self, name: str) -> str:
        """A required, non-empty string field."""
        value = self.values.get(name)
        if value is None:
            raise self.missing(name)
        if not isinstance(value, str):
            raise self.invalid(name, f"field '{name}' must be a string, got {_type_name(value)}")
        if not value.strip():
            raise self.invalid(name, f"field '{name}' is empty")
        return value

    def optional_text(self, name: str) -> str | None:
        """An optional string field: ``None`` when absent or blank."""
        value = self.values.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise self.invalid(name, f"field '{name}' must be a string, got {_type_name(value)}")
        return value

    def contexts(self, *, allow_empty: bool = False) -> list[str]:
        """``retrieved_contexts`` as a list of strings, in retrieval order."""
        name = "retrieved_contexts"
        value = self.values.get(name)
        if value is None:
            if allow_empty:
                return []
            raise self.missing(name)
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise self.invalid(
                name, f"field '{name}' must be a list of strings, got {_type_name(value)}"
            )
        for i, piece in enumerate(value):
            if not isinstance(piece, str):
                raise self.invalid(
                    name, f"field '{name}[{i}]' must be a string, got {_type_name(piece)}"
                )
        if not value and not allow_empty:
            raise self.invalid(name, f"field '{name}' is empty")
        return list(value)

    def missing(self, name: str) -> InvalidItemError:
        """The per-item error for a required field that is absent (raise it)."""
        source = self.sources.get(name)
        where = f" (mapped from {source!r}, which this record lacks)" if source else ""
        return self.invalid(name, f"required field '{name}' is missing{where}")

    def invalid(self, name: str, message: str) -> InvalidItemError:
        """The per-item error for field ``name`` (raise it)."""
        return InvalidItemError(f"item {self.id}: {message}", field=name, item_id=self.id)


def make_item(
    record: Mapping[str, Any] | BaseModel,
    *,
    index: int,
    mapping: Mapping[str, str] | None = None,
) -> Item:
    """Normalise one record: apply the user's ``mapping`` (our name -> their name), then the Mastra
    aliases. Raises :class:`InvalidItemError` when the record is not an object or names one field
    twice (``input`` and ``user_input``)."""
    fallback_id = f"#{index}"
    if isinstance(record, BaseModel):
        record = record.model_dump()
    if not isinstance(record, Mapping):
        raise InvalidItemError(
            f"item {fallback_id}: a record must be a JSON object, got {_type_name(record)}",
            item_id=fallback_id,
        )
    renames = dict(mapping or {})
    record = _with_paths(record, renames.values())
    raw_id = record.get(renames.get("id", "id"))
    item_id = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else ""
    if not _encodable(item_id):
        raise InvalidItemError(
            f"item {fallback_id}: field 'id' holds invalid Unicode (a lone surrogate)",
            field="id",
            item_id=fallback_id,
        )
    item_id = item_id or fallback_id
    values: dict[str, Any] = {}
    for ours in FIELDS:
        sources = [renames[ours]] if ours in renames else [ours]
        sources += [alias for alias, target in ALIASES.items() if target == ours]
        present = [s for s in sources if s in record and not _missing(record[s])]
        if len(present) > 1:
            raise InvalidItemError(
                f"item {item_id}: fields {' and '.join(repr(p) for p in present)} both give "
                f"'{ours}'; keep one",
                field=ours,
                item_id=item_id,
            )
        if present:
            values[ours] = plain(record[present[0]])
            if not _encodable(values[ours]):
                raise InvalidItemError(
                    f"item {item_id}: field '{ours}' holds invalid Unicode (a lone surrogate)",
                    field=ours,
                    item_id=item_id,
                )
    mapped = {ours: theirs for ours, theirs in renames.items() if ours in FIELDS}
    return Item(id=item_id, index=index, values=values, sources=mapped)


def _with_paths(record: Mapping[str, Any], sources: Iterable[str]) -> Mapping[str, Any]:
    """``record`` plus the value of every mapped source that is a path into nested data rather
    than a key: ``meta.question`` (a field of an object), ``contexts[].text`` (that field of
    each element of a list). A path that does not resolve is an absent field."""
    paths = [s for s in sources if s not in record and ("." in s or "[]" in s)]
    if not paths:
        return record
    extended = dict(record)
    for path in paths:
        value = _follow(record, path.split("."))
        if value is not None:
            extended[path] = value
    return extended


def _follow(value: Any, steps: list[str]) -> Any:
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    each = step.endswith("[]")
    key = step[:-2] if each else step
    if key:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    if not each:
        return _follow(value, rest)
    value = plain(value)
    if not isinstance(value, list):
        return None
    found = [_follow(v, rest) for v in value]
    return None if any(f is None for f in found) else found


def _missing(value: Any) -> bool:
    """None, or a float NaN: how a DataFrame row shows a column this record lacks."""
    return value is None or (isinstance(value, float) and value != value)  # noqa: PLR0124


def plain(value: Any) -> Any:
    """Plain Python values for what data libraries hand over: numpy arrays and scalars (what
    ``DataFrame.to_dict`` and Hugging Face datasets give for list columns), pyarrow arrays and
    scalars, tuples; lists and dicts recursively."""
    if isinstance(value, (str, bytes, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    for method in ("as_py", "to_pylist", "tolist"):  # pyarrow scalars, pyarrow arrays, numpy
        convert = getattr(value, method, None)
        if callable(convert):
            return plain(convert())
    return value


def _encodable(value: Any) -> bool:
    """False when a string in ``value`` cannot be written as UTF-8 (lone surrogates from JSON
    escapes such as ``"\\ud800"``): such text could be neither prompted nor stored."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, (list, tuple)):
        return all(_encodable(v) for v in value)
    return True


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__
