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


def test_the_pcie_link_queries_nvtop_makes_answer_not_supported() -> None:
    # nvtop looks up these five at start and gives up on NVML if one is missing; the fake's
    # snapshots have no PCIe figures, so each answers NotSupported (as a driver without them).
    queries = {
        "max generation": pynvml.nvmlDeviceGetMaxPcieLinkGeneration,
        "max width": pynvml.nvmlDeviceGetMaxPcieLinkWidth,
        "current generation": pynvml.nvmlDeviceGetCurrPcieLinkGeneration,
        "current width": pynvml.nvmlDeviceGetCurrPcieLinkWidth,
        "throughput": lambda handle: pynvml.nvmlDeviceGetPcieThroughput(
            handle, pynvml.NVML_PCIE_UTIL_RX_BYTES
        ),
    }
    fake = FakeNvml([snapshot(gpu_sample(0))])
    answers: dict[str, str] = {}
    with installed(fake):
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            for name, query in queries.items():
                try:
                    query(handle)
                    answers[name] = "answered"
                except pynvml.NVMLError as error:
                    answers[name] = type(error).__name__
        finally:
            pynvml.nvmlShutdown()
    assert answers == dict.fromkeys(queries, "NVMLError_NotSupported")
