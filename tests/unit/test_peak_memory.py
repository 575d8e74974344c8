"""localjudge.run.bench.memory: the peak resident memory of a block, through psutil on every OS."""

from __future__ import annotations

import mmap
import sys
import time

import psutil
import pytest

from localjudge.run.bench.memory import MB, PeakMemory


def test_a_short_lived_allocation_is_in_the_peak():
    before = psutil.Process().memory_info().rss
    size = 96 * MB
    with PeakMemory() as peak:
        # a fresh anonymous mapping, every page written: resident on top of what was there
        # (a bytearray can reuse heap pages this process freed earlier and raise no RSS)
        block = mmap.mmap(-1, size)
        for offset in range(0, size, mmap.PAGESIZE):
            block[offset] = 1
        alive = psutil.Process().memory_info().rss
        time.sleep(0.3)  # several sampling intervals
        block.close()
    assert alive >= before + 0.9 * size
    assert peak.mb is not None
    # the block was freed before the end: only the samples taken while it lived can see it
    assert peak.peak_bytes >= alive - 0.05 * size
    assert peak.method == ("os peak" if sys.platform == "win32" else "sampled rss")


def test_the_figure_is_in_megabytes_not_kilobytes_or_bytes():
    with PeakMemory() as peak:
        pass
    rss_mb = psutil.Process().memory_info().rss / MB
    # the same order as this process's current RSS (ru_maxrss on macOS was 1024x too large)
    assert peak.mb == pytest.approx(rss_mb, rel=0.5)


def test_the_sampler_thread_ends_with_the_block():
    with PeakMemory(interval=0.01) as peak:
        thread = peak._thread
        assert thread is None or thread.is_alive()
    assert thread is None or not thread.is_alive()
