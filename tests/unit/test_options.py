"""The judge options that are parsed, not just typed: thread default, flash attention, chat
template kwargs; and JudgeSettings holding them in one spelling."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localjudge.errors import UsageError
from localjudge.judge.llama.options import (
    RESERVED_TEMPLATE_VARIABLES,
    chat_template_kwargs,
    default_threads,
    flash_attn_mode,
    pick_threads,
)
from localjudge.run.settings import JudgeSettings

counts = st.one_of(st.none(), st.integers(min_value=1, max_value=512))


@pytest.mark.parametrize(
    ("physical", "logical", "affinity", "expected"),
    [
        (8, 16, 16, 8),  # physical cores, not hyperthreads
        (8, 16, 4, 4),  # a process pinned to 4 CPUs
        (None, 6, None, 6),  # psutil does not know: os.cpu_count()
        (None, None, None, 1),
        (2, 2, None, 2),  # no affinity API (macOS)
    ],
)
def test_pick_threads(physical, logical, affinity, expected) -> None:
    assert pick_threads(physical, logical, affinity) == expected


@given(counts, counts, counts)
def test_pick_threads_is_at_least_one_and_never_past_the_affinity(physical, logical, affinity):
    n = pick_threads(physical, logical, affinity)
    assert n >= 1
    if affinity:
        assert n <= affinity
    assert n <= (physical or logical or 1)


def test_default_threads_on_this_machine() -> None:
    import psutil  # noqa: PLC0415

    physical = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else physical
    assert default_threads() == min(physical, allowed)


@pytest.mark.parametrize(
    ("value", "mode"),
    [("on", "on"), ("OFF", "off"), (" auto ", "auto"), (True, "on"), (False, "off")],
)
def test_flash_attn_spellings(value, mode) -> None:
    assert flash_attn_mode(value) == mode


@pytest.mark.parametrize("value", ["yes", "1", "", "enabled"])
def test_flash_attn_rejects_other_words(value) -> None:
    with pytest.raises(UsageError, match="flash_attn must be one of on, off, auto"):
        flash_attn_mode(value)


def test_template_kwargs_from_json_and_mappings() -> None:
    assert chat_template_kwargs('{"enable_thinking": false, "x": [1, "a"]}') == {
        "enable_thinking": False,
        "x": [1, "a"],
    }
    assert chat_template_kwargs({"depth": {"a": 1}}) == {"depth": {"a": 1}}
    assert chat_template_kwargs(None) == {}
    assert chat_template_kwargs("{}") == {}


def test_template_kwargs_are_a_copy() -> None:
    given_ = {"x": [1]}
    got = chat_template_kwargs(given_)
    got["x"].append(2)
    assert given_ == {"x": [1]}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{bad", "--opt is not valid JSON"),
        ("[1, 2]", "--opt must be a JSON object, got list"),
        ('"text"', "--opt must be a JSON object, got str"),
        ("3", "--opt must be a JSON object, got int"),
        ({1: "a"}, "--opt keys must be strings"),
        ({"when": object()}, "--opt must hold JSON values only"),
        ({"x": float("nan")}, "--opt must hold JSON values only"),
        ('{"messages": []}', "--opt cannot set messages"),
        ('{"bos_token": "", "tools": []}', "--opt cannot set bos_token, tools"),
    ],
)
def test_template_kwargs_errors_name_the_option(value, message) -> None:
    with pytest.raises(UsageError) as info:
        chat_template_kwargs(value, name="--opt")
    assert info.value.message.startswith(message)


def test_reserved_variables_cover_what_the_renderer_passes() -> None:
    import inspect  # noqa: PLC0415

    from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415

    # the names llama-cpp-python's renderer gives the template itself
    source = inspect.getsource(Jinja2ChatFormatter.__call__)
    call = source[source.index("self._environment.render(") :]
    call = call[: call.index("\n" + " " * 8 + ")")]
    passed = set(re.findall(r"^\s+(\w+)=", call, flags=re.MULTILINE))
    assert {"messages", "bos_token", "add_generation_prompt"} <= passed
    assert passed <= RESERVED_TEMPLATE_VARIABLES


def test_judge_settings_normalise_and_record_the_new_options() -> None:
    settings = JudgeSettings(
        n_threads=3, flash_attn="AUTO", chat_template_kwargs={"enable_thinking": False}
    )
    assert settings.flash_attn == "auto"
    recorded = settings.recorded()
    assert recorded["threads"] == 3
    assert recorded["flash_attn"] == "auto"
    assert recorded["chat_template_kwargs"] == {"enable_thinking": False}


def test_judge_settings_defaults() -> None:
    settings = JudgeSettings()
    assert (settings.flash_attn, settings.chat_template_kwargs) == ("off", {})
    assert settings.threads == default_threads()
    assert settings.recorded()["threads"] == default_threads()


def test_judge_settings_refuse_bad_values_before_loading() -> None:
    with pytest.raises(UsageError, match="flash_attn"):
        JudgeSettings(flash_attn="maybe")
    with pytest.raises(UsageError, match="chat_template_kwargs must be a JSON object"):
        JudgeSettings(chat_template_kwargs=[1])  # type: ignore[arg-type]
