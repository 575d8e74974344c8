"""How the AMX state of a llama.cpp build and ``LOCALJUDGE_AMX`` decide a judge's load path."""

from __future__ import annotations

import pytest

from localjudge import ModelError
from localjudge.judge.llama.native import AMX_ENV, NativeInfo, amx_decision


def info(*, buffers: list[str] | None, amx_int8: str = "0") -> NativeInfo:
    return NativeInfo(
        llama_cpp_python="0",
        system_info=f"CPU : AVX2 = 1 | AMX_INT8 = {amx_int8} |",
        features={"AVX2": "1", "AMX_INT8": amx_int8},
        extra_buffer_types=buffers,
        gpu_offload=False,
        devices=[],
    )


AMX_CPU = info(buffers=["AMX", "CPU_REPACK"], amx_int8="1")
#: an AMX build on a CPU without AMX: the kernels are compiled in but never registered
AMX_BUILD_ONLY = info(buffers=["CPU_REPACK"], amx_int8="1")
PLAIN = info(buffers=["CPU_REPACK"])
#: a build whose buffer types cannot be listed: its system info decides
UNLISTED_AMX = info(buffers=None, amx_int8="1")


@pytest.mark.parametrize(
    ("native", "setting", "state", "extra"),
    [
        (AMX_CPU, "", "guarded", False),
        (AMX_CPU, "auto", "guarded", False),
        (AMX_CPU, "1", "kept", True),
        (AMX_CPU, "0", "off", False),
        (UNLISTED_AMX, "", "guarded", False),
        (AMX_BUILD_ONLY, "", "absent", True),
        (PLAIN, "", "absent", True),
        (PLAIN, "1", "absent", True),
        (PLAIN, "0", "off", False),
        (PLAIN, " AUTO ", "absent", True),
    ],
)
def test_decision(native: NativeInfo, setting: str, state: str, extra: bool) -> None:
    decision = amx_decision(native, setting)
    assert decision.state == state
    assert decision.extra_buffers is extra
    # only the guard speaks, and it names the way out
    assert (decision.notice is not None) == (state == "guarded")
    if decision.notice:
        assert f"{AMX_ENV}=1" in decision.notice
        assert decision.notice.startswith("localjudge: ")


def test_the_environment_is_read_when_no_setting_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(AMX_ENV, "1")
    assert amx_decision(AMX_CPU).state == "kept"
    monkeypatch.delenv(AMX_ENV)
    assert amx_decision(AMX_CPU).state == "guarded"


@pytest.mark.parametrize("value", ["yes", "2", "on"])
def test_an_unknown_setting_is_refused_with_the_choices(value: str) -> None:
    with pytest.raises(ModelError, match=AMX_ENV) as caught:
        amx_decision(PLAIN, value)
    assert "=1" in caught.value.hint
