"""The native build under the llama.cpp judge: what llama-cpp-python was built with and can run
on (system info, devices, buffer types), the AMX decision, GPU layers, and importing the
backends (``llama_cpp``, ``llguidance``) with llama.cpp's log routed and its stderr quiet.

Everything here imports ``llama_cpp`` inside functions only, so importing it stays light.
No native crash from AMX: on CPUs where llama.cpp's AMX kernels are active (they segfault,
upstream llama.cpp #20824), the model is loaded without llama.cpp's extra buffer types, so those
kernels never run (:func:`amx_decision`); ``LOCALJUDGE_AMX=1`` keeps them.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from localjudge.errors import ConstraintError, ModelError
from localjudge.judge.engine.log import install_log
from localjudge.versions import package_version

__all__ = [
    "AMX_BUFFER_TYPE",
    "AMX_ENV",
    "AmxDecision",
    "Device",
    "NativeInfo",
    "amx_decision",
    "announce",
    "debug_enabled",
    "gpu_layers",
    "import_backends",
    "import_llama_cpp",
    "native_info",
    "quiet_stderr",
]

#: ``auto`` (default): load without extra buffer types when llama.cpp's AMX kernels are active;
#: ``1``: keep the AMX kernels; ``0``: never use extra buffer types (AMX, weight repacking)
AMX_ENV = "LOCALJUDGE_AMX"
#: the name of llama.cpp's AMX buffer type (``ggml_backend_amx_buffer_type_get_name``)
AMX_BUFFER_TYPE = "AMX"


@dataclass(frozen=True)
class Device:
    """One device llama.cpp can compute on."""

    name: str
    description: str
    kind: str


@dataclass(frozen=True)
class NativeInfo:
    """What the loaded llama.cpp build reports about itself and this machine."""

    llama_cpp_python: str
    system_info: str
    #: CPU features the build uses (``AVX2``, ``AMX_INT8``, ...), from its system info
    features: dict[str, str]
    #: the CPU backend's extra buffer types (``AMX``, ``CPU_REPACK``); None when not listable
    extra_buffer_types: list[str] | None
    gpu_offload: bool
    devices: list[Device]

    @property
    def amx_build(self) -> bool:
        """The build carries llama.cpp's AMX kernels."""
        return self.features.get("AMX_INT8") == "1"

    @property
    def amx_active(self) -> bool:
        """llama.cpp would put weights in AMX buffers here (the path that crashes)."""
        if self.extra_buffer_types is not None:
            return AMX_BUFFER_TYPE in self.extra_buffer_types
        return self.amx_build


@dataclass(frozen=True)
class AmxDecision:
    """How a judge loads its weights given the AMX state and ``LOCALJUDGE_AMX``."""

    #: ``absent`` (no AMX kernels in use), ``guarded`` (active, turned off), ``kept``
    #: (active, kept by LOCALJUDGE_AMX=1) or ``off`` (LOCALJUDGE_AMX=0)
    state: str
    #: whether llama.cpp may load weights into extra buffer types (AMX, repacking)
    extra_buffers: bool
    #: what to tell the user once, or None
    notice: str | None


def gpu_layers(requested: int | str, offload_supported: bool) -> int:
    """The layers to offload: ``auto`` is all of them (-1) on a build that can offload and 0
    on a CPU-only one; ``all`` is -1. Asking a CPU-only build for offload is an error, never a
    silent CPU run."""
    value = str(requested).strip().lower()
    if value == "auto":
        return -1 if offload_supported else 0
    if value == "all":
        layers = -1
    else:
        try:
            layers = int(value)
        except ValueError:
            raise ModelError(
                f"n_gpu_layers must be auto, all, -1 or a number of layers, got {requested!r}"
            ) from None
        if layers < -1:
            raise ModelError(f"n_gpu_layers must be -1 (all) or more, got {layers}")
    if layers != 0 and not offload_supported:
        raise ModelError(
            f"GPU offload asked for (n_gpu_layers {requested}) but this llama-cpp-python build "
            "cannot offload: it was built for the CPU only",
            hint="reinstall llama-cpp-python with GPU support (e.g. CMAKE_ARGS=-DGGML_CUDA=on), "
            "or use -ngl 0 / auto",
        )
    return layers


def native_info() -> NativeInfo:
    """What the installed llama.cpp reports: CPU features, extra buffer types, GPU offload and
    devices. Loads llama.cpp (not a model); raises :class:`ModelError` when it cannot."""
    llama_cpp = import_llama_cpp()
    system_info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    features = dict(re.findall(r"([A-Z][A-Z0-9_]*) = (\w+)", system_info))
    buffer_types, devices = _ggml_registry(llama_cpp)
    return NativeInfo(
        llama_cpp_python=package_version("llama-cpp-python"),
        system_info=system_info,
        features=features,
        extra_buffer_types=buffer_types,
        gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()),
        devices=devices,
    )


def amx_decision(info: NativeInfo, setting: str | None = None) -> AmxDecision:
    """Whether a judge may use llama.cpp's extra buffer types, from the AMX state of the build and
    this CPU and ``setting`` (default: ``$LOCALJUDGE_AMX``; ``auto``, ``1`` or ``0``).

    llama.cpp's AMX matmul kernels fault on ``ldtilecfg`` in worker threads (llama.cpp #20824);
    the AMX buffer type is an "extra buffer type", so loading without those keeps the kernels from
    ever running. It also turns off weight repacking, which costs some speed on such CPUs only.
    """
    value = (os.environ.get(AMX_ENV, "") if setting is None else setting).strip().lower()
    if value not in ("", "auto", "0", "1"):
        raise ModelError(
            f"{AMX_ENV}={value!r} is not understood",
            hint=f"use {AMX_ENV}=1 to keep llama.cpp's AMX kernels, 0 to turn off extra buffer "
            "types, or leave it unset",
        )
    if value == "0":
        return AmxDecision("off", extra_buffers=False, notice=None)
    if not info.amx_active:
        return AmxDecision("absent", extra_buffers=True, notice=None)
    if value == "1":
        return AmxDecision("kept", extra_buffers=True, notice=None)
    return AmxDecision(
        "guarded",
        extra_buffers=False,
        notice="localjudge: this CPU runs llama.cpp's AMX kernels, which crash (llama.cpp "
        f"#20824); the judge loads without them. Set {AMX_ENV}=1 to keep them.",
    )


_announced: set[str] = set()


def announce(notice: str | None) -> None:
    """Print a notice on stderr once per process."""
    if notice and notice not in _announced:
        _announced.add(notice)
        print(notice, file=sys.stderr, flush=True)


def _ggml_registry(llama_cpp: Any) -> tuple[list[str] | None, list[Device]]:
    """The CPU backend's extra buffer types and every device, through ggml's backend registry
    (plain C calls; llama-cpp-python binds none of them). ``(None, [])`` when unavailable."""
    import ctypes  # noqa: PLC0415

    try:
        from llama_cpp._ggml import libggml as lib  # noqa: PLC0415

        p = ctypes.c_void_p
        for name, restype, argtypes in (
            ("ggml_backend_reg_by_name", p, [ctypes.c_char_p]),
            ("ggml_backend_reg_dev_get", p, [p, ctypes.c_size_t]),
            ("ggml_backend_reg_get_proc_address", p, [p, ctypes.c_char_p]),
            ("ggml_backend_buft_name", ctypes.c_char_p, [p]),
            ("ggml_backend_dev_count", ctypes.c_size_t, []),
            ("ggml_backend_dev_get", p, [ctypes.c_size_t]),
            ("ggml_backend_dev_name", ctypes.c_char_p, [p]),
            ("ggml_backend_dev_description", ctypes.c_char_p, [p]),
            ("ggml_backend_dev_type", ctypes.c_int, [p]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
    except (ImportError, AttributeError, OSError):
        return None, []
    kinds = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}
    devices = []
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        devices.append(
            Device(
                name=(lib.ggml_backend_dev_name(dev) or b"").decode("utf-8", "replace"),
                description=(lib.ggml_backend_dev_description(dev) or b"").decode(
                    "utf-8", "replace"
                ),
                kind=kinds.get(lib.ggml_backend_dev_type(dev), "other"),
            )
        )
    reg = lib.ggml_backend_reg_by_name(b"CPU")
    address = lib.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_dev_get_extra_bufts")
    if not reg or not address:
        return None, devices
    get_extra = ctypes.CFUNCTYPE(ctypes.POINTER(p), p)(address)
    array = get_extra(lib.ggml_backend_reg_dev_get(reg, 0))
    names: list[str] = []
    i = 0
    while array and array[i]:
        names.append((lib.ggml_backend_buft_name(array[i]) or b"").decode("utf-8", "replace"))
        i += 1
    return names, devices


# ---------------------------------------------------------------------- backend plumbing


def import_llama_cpp() -> Any:
    try:
        import llama_cpp  # noqa: PLC0415
    except ImportError as exc:
        raise ModelError(
            f"llama-cpp-python is not importable: {exc}", hint="pip install llama-cpp-python"
        ) from exc
    return llama_cpp


def import_backends() -> tuple[Any, Any]:
    llama_cpp = import_llama_cpp()
    install_log(
        llama_cpp, verbose=debug_enabled()
    )  # llama.cpp's log: errors only, unless debugging
    try:
        import llguidance  # noqa: PLC0415
        import llguidance.numpy  # noqa: PLC0415 (the engine's masks)
    except ImportError as exc:
        raise ConstraintError(
            f"constrained decoding is unavailable: {exc}",
            hint="pip install llguidance; localjudge never decodes unconstrained",
        ) from exc
    return llama_cpp, llguidance


def debug_enabled() -> bool:
    """``LOCALJUDGE_DEBUG`` is set: tracebacks and llama.cpp's own log."""
    return bool(os.environ.get("LOCALJUDGE_DEBUG"))


@contextmanager
def quiet_stderr() -> Any:
    """Silence llama.cpp's C-level log lines while loading (they go straight to fd 2)."""
    if debug_enabled():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
