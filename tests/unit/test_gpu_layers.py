"""-ngl: what each value offloads on a build that can offload and on a CPU-only one."""

from __future__ import annotations

import pytest

from localjudge.errors import ModelError
from localjudge.judge.llama.native import gpu_layers


@pytest.mark.parametrize(
    ("requested", "gpu", "layers"),
    [
        ("auto", True, -1),
        ("auto", False, 0),
        ("AUTO", False, 0),
        ("all", True, -1),
        (-1, True, -1),
        ("-1", True, -1),
        (12, True, 12),
        ("12", True, 12),
        (0, True, 0),
        (0, False, 0),
        ("0", False, 0),
    ],
)
def test_layers_offloaded(requested, gpu, layers) -> None:
    assert gpu_layers(requested, gpu) == layers


@pytest.mark.parametrize("requested", ["all", -1, 12, "3"])
def test_offload_asked_of_a_cpu_only_build_is_an_error(requested) -> None:
    with pytest.raises(ModelError, match="cannot offload") as info:
        gpu_layers(requested, False)
    assert "-ngl 0" in info.value.hint


@pytest.mark.parametrize("requested", ["many", -2, "1.5", ""])
def test_nonsense_is_refused(requested) -> None:
    with pytest.raises(ModelError, match="n_gpu_layers"):
        gpu_layers(requested, True)
