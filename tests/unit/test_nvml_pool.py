"""The sampling pool: one worker on a normal tick, another only when a GPU is stuck."""

from __future__ import annotations

import threading
import time

import pytest

from gputop.model import GpuSample
from gputop.sources.nvml.pool import SamplerPool

DEADLINE = 1.0
"""Wide enough that a loaded CI box still samples the free GPUs in time."""
STALL = 0.05


class Sampler:
    """Counts its samples and the threads that took them; may block or raise on demand."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.calls = 0
        self.threads: set[str] = set()
        self.block: threading.Event | None = None
        self.error: Exception | None = None

    def sample(self) -> GpuSample:
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        if self.block is not None:
            self.block.wait()
        if self.error is not None:
            raise self.error
        return GpuSample(index=self.index, fan_speed=float(self.calls))


def _pool(count: int, stall: float = STALL) -> tuple[SamplerPool, list[Sampler]]:
    samplers = [Sampler(i) for i in range(count)]
    return SamplerPool(samplers, max(DEADLINE, 2 * stall), stall=stall), samplers


def _until_fresh(pool: SamplerPool, index: int) -> list[GpuSample]:
    """Poll until GPU ``index`` is fresh again (a released call needs a moment to return)."""
    give_up = time.monotonic() + 10
    while True:
        gpus = pool.sample()
        if not gpus[index].stale or time.monotonic() > give_up:
            return gpus
        time.sleep(0.01)


def test_one_worker_samples_every_gpu_on_a_normal_tick() -> None:
    # Nothing is stuck: a long stall keeps a slow CI box from looking like a stuck GPU.
    pool, samplers = _pool(8, stall=30.0)
    try:
        for tick in range(1, 6):
            gpus = pool.sample()
            assert [g.index for g in gpus] == list(range(8))
            assert not any(g.stale for g in gpus)
            assert all(g.fan_speed == float(tick) for g in gpus)
        assert pool.threads == 1
        assert {name for s in samplers for name in s.threads} == {"gputop-nvml-0"}
    finally:
        pool.close()


def test_a_stuck_gpu_holds_only_its_worker_and_is_not_asked_again() -> None:
    pool, samplers = _pool(4)
    release = samplers[1].block = threading.Event()
    try:
        first = pool.sample()
        assert first[1].stale and first[1].fan_speed is None  # nothing read before
        assert [g.stale for g in first] == [False, True, False, False]
        assert pool.threads == 2  # the second one took the GPUs queued behind the stuck one
        second = pool.sample()
        assert [g.stale for g in second] == [False, True, False, False]
        assert samplers[1].calls == 1
        assert pool.threads == 2  # the free worker is woken again, not a third one started
        samplers[1].block = None
        release.set()
        later = _until_fresh(pool, 1)
        assert not any(g.stale for g in later)
        assert later[1].fan_speed == 2.0
        assert pool.close()
    finally:
        release.set()


def test_a_stale_gpu_shows_its_last_sample_including_a_late_one() -> None:
    pool, samplers = _pool(2)
    first, second = threading.Event(), threading.Event()
    try:
        assert pool.sample()[1].fan_speed == 1.0
        samplers[1].block = first
        stale = pool.sample()[1]
        assert stale.stale and stale.fan_speed == 1.0
        samplers[1].block = second  # its next sample hangs too
        first.set()  # the second sample returns, after its deadline
        give_up = time.monotonic() + 10
        shown = pool.sample()[1]
        while shown.fan_speed != 2.0 and time.monotonic() < give_up:
            time.sleep(0.01)
            shown = pool.sample()[1]
        # What the late call read is what the GPU shows while its next sample hangs.
        assert shown.stale and shown.fan_speed == 2.0
    finally:
        first.set()
        second.set()
        pool.close()


def test_workers_never_outnumber_the_gpus() -> None:
    pool, samplers = _pool(3)
    release = threading.Event()
    for sampler in samplers:
        sampler.block = release
    try:
        assert all(g.stale for g in pool.sample())
        assert all(g.stale for g in pool.sample())
        assert pool.threads == 3
        assert all(s.calls == 1 for s in samplers)
        assert not pool.close()  # samples still running inside "NVML"
    finally:
        release.set()


def test_an_error_in_a_sampler_reaches_the_polling_thread() -> None:
    pool, samplers = _pool(3)
    samplers[2].error = RuntimeError("driver hiccup")
    try:
        with pytest.raises(RuntimeError, match="driver hiccup"):
            pool.sample()
        samplers[2].error = None
        gpus = pool.sample()
        assert not any(g.stale for g in gpus)
        assert all(s.calls == 2 for s in samplers)
    finally:
        pool.close()
