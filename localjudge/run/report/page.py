"""The page machinery shared by every HTML report: the Jinja environment over ``templates/``
(autoescaped, strict), the inlined assets, the Content-Security-Policy that keeps a page
offline, the escaped JSON payload for the page's script, and the number and text formatting
the views use. The views themselves are :mod:`localjudge.run.report.render` (eval runs) and
:mod:`localjudge.run.report.views` (bench runs, diffs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from localjudge.canonical import compact_json
from localjudge.console import number
from localjudge.metrics.base import shown

#: nothing may be fetched: inline styles and scripts only, images only as data: URLs
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

#: the policy as it goes into the attribute: its quotes stay literal (it is ours, not data)
CSP_ATTRIBUTE = Markup(CSP)  # noqa: S704


def script_json(value: Any) -> Markup:
    """JSON safe to place inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` are
    written as ``\\u003c`` etc., so no string in the data can close the element."""
    text = compact_json(finite(value))
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return Markup(text)  # noqa: S704 (escaped for this context just above)


def as_text(value: Any) -> str:
    return shown(value)


def label_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return as_text(value)


# --------------------------------------------------------------------------- rendering


def num(value: Any, digits: int = 3) -> str:
    """A figure on a page (:func:`~localjudge.console.number`, a dash where there is none)."""
    return number(value, digits, missing="–")


def pair_text(a: Any, b: Any) -> str:
    return f"{num(a)} / {num(b)}"


def ci_text(value: Any) -> str:
    if isinstance(value, Sequence) and len(value) == 2:
        return f"[{num(value[0])}, {num(value[1])}]"
    return "–"


def text_pairs(mapping: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), as_text(v)) for k, v in mapping.items()]


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (JSON has no spelling for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def asset(name: str) -> Markup:
    """A static file from ``templates/``, inlined as is (it is ours, not data)."""
    text = (resources.files("localjudge.run.report") / "templates" / name).read_text("utf-8")
    return Markup(text)  # noqa: S704 (our own asset, not data)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("localjudge.run.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = num
    env.filters["ci"] = ci_text
    return env


def render(template: str, context: Mapping[str, Any]) -> str:
    return environment().get_template(template).render(**context, style=asset("report.css"))
