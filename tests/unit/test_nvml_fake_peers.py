"""The fake NVML answers what the peers of ``benchmarks/bench_tui.py --side-by-side`` ask.

gpustat, nvitop (and nvtop, through a shim) run on the same fake as gputop in that benchmark;
a function the fake lacks makes a peer fail to start (gpustat) or report less than it would
on a real driver, and the comparison would not be like for like.
"""

from __future__ import annotations

import pynvml  # noqa: TID251 -- the peers call the real pynvml, as this test does

from fakes.nvml_fake import FakeNvml
from fakes.nvml_install import installed
from fakes.nvml_scenarios import gpu_sample, snapshot


def test_a_device_says_its_index() -> None:
    fake = FakeNvml([snapshot(gpu_sample(0), gpu_sample(1), gpu_sample(2))])
    with installed(fake):
        pynvml.nvmlInit()
        try:
            indices = [
                pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByIndex(index))
                for index in range(3)
            ]
        finally:
            pynvml.nvmlShutdown()
    assert indices == [0, 1, 2]
