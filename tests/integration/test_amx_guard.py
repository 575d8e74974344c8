"""The AMX guard on the real judge: llama.cpp's AMX kernels segfault (llama.cpp #20824), so a
judge never loads weights into AMX buffers unless ``LOCALJUDGE_AMX=1`` says so.

Every judge call here runs in a child process: on an AMX machine, a judge without the guard dies
with SIGSEGV, and the test reports that instead of taking pytest down with it.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from localjudge.judge.llama.native import AMX_ENV, amx_decision, native_info

pytestmark = pytest.mark.model

#: loads the default judge, makes one real constrained call, prints what the judge recorded
JUDGE_CALL = """
import json
from localjudge import ContextPosition, load_judge, score
judge = load_judge("smollm2-135m", n_threads=2, cache=False)
r = score(ContextPosition(), judge, user_input="Where is the Eiffel Tower?",
    retrieved_contexts=["Paris is in France.", "The Eiffel Tower is in Paris."])
print(json.dumps({"settings": dict(judge.identity.settings), "n": len(r.verdicts)}))
"""

#: loads a judge with llama.cpp's own log on (LOCALJUDGE_DEBUG=1)
LOAD_LOG = """
import sys
from localjudge.judge.llama.judge import load_judge
judge = load_judge(sys.argv[1], n_threads=2, n_ctx=1024, cache=False)
print("use_extra_bufts", judge.identity.settings["cpu_extra_buffers"])
"""


def _env(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _judge_call(python_runner: Any, **env: str | None) -> tuple[dict[str, Any], str]:
    proc = python_runner(JUDGE_CALL, env=_env(**env), timeout=300)
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        pytest.fail(f"the judge died with {name}: the AMX guard did not hold\n{proc.stderr}")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_the_default_judge_decodes_whatever_this_cpu_has(python_runner: Any) -> None:
    """The README's path: no setting, one real call. On an AMX machine this is the guard's test:
    without it the call dies with SIGSEGV."""
    out, stderr = _judge_call(python_runner, **{AMX_ENV: None})
    assert out["n"] == 2
    info = native_info()
    if info.amx_active:
        assert out["settings"]["amx"] == "guarded"
        assert out["settings"]["cpu_extra_buffers"] is False
        assert stderr.count("AMX kernels") == 1, stderr  # said once, on stderr
    else:
        assert out["settings"]["amx"] == "absent"
        assert out["settings"]["cpu_extra_buffers"] is True
        assert "AMX" not in stderr


def test_the_guards_load_path_decodes_and_is_recorded(python_runner: Any) -> None:
    """``LOCALJUDGE_AMX=0`` takes the guard's load path on any CPU: the same call still works,
    and the judge records it (it is part of every cache key)."""
    out, _ = _judge_call(python_runner, **{AMX_ENV: "0"})
    assert out["n"] == 2
    assert out["settings"]["amx"] == "off"
    assert out["settings"]["cpu_extra_buffers"] is False


@pytest.mark.parametrize("model", ["smollm2-135m", "gemma3-270m"])
def test_the_guard_reaches_llama_cpp(python_runner: Any, model: str) -> None:
    """llama.cpp's own load log: with extra buffer types it considers CPU_REPACK (or AMX) for
    the weights; with the guard's parameters it never mentions one. (On an AMX machine the
    default load is the guarded one.)"""
    info = native_info()
    types = info.extra_buffer_types
    assert types is not None, "the CPU backend's extra buffer types could not be listed"
    debug = {"LOCALJUDGE_DEBUG": "1"}
    plain = python_runner(LOAD_LOG, model, env=_env(**debug, **{AMX_ENV: None}), timeout=300)
    guarded = python_runner(LOAD_LOG, model, env=_env(**debug, **{AMX_ENV: "0"}), timeout=300)
    assert plain.returncode == 0, plain.stderr
    assert guarded.returncode == 0, guarded.stderr
    assert "use_extra_bufts False" in guarded.stdout
    if info.amx_active:  # the default load is the guarded one here
        assert "use_extra_bufts False" in plain.stdout
    else:
        assert "use_extra_bufts True" in plain.stdout
        if types:  # the build has some: the plain load sees them, the guarded one does not
            assert any(t in plain.stderr for t in types), plain.stderr[-2000:]
    assert not any(t in guarded.stderr for t in (*types, "CPU_REPACK", "AMX")), guarded.stderr


def test_the_build_is_reported() -> None:
    info = native_info()
    assert info.system_info.startswith("CPU :") or "CPU" in info.system_info
    assert info.features.get("AVX") in ("0", "1", None)
    assert any(d.kind == "cpu" for d in info.devices), info.devices
    assert amx_decision(info).state in ("absent", "guarded")
