"""GPU samplers run on daemon threads, each poll bounded by a deadline, with few wake-ups.

On a normal tick one worker samples every GPU in turn: one thread wakes, and the polling
thread wakes once when the worker runs out of GPUs. A thread per GPU cost a wake-up and an
answer per GPU each tick, and the GIL handed back and forth between nine threads, which on an
8-GPU box was about a third of the sampling side's own CPU.

A GPU stuck in a driver call holds only the worker inside it. When no queued GPU has been
taken up for ``stall`` seconds, another worker (started on first need, at most one per GPU)
takes the rest of the queue, so the other GPUs are still sampled within the deadline. A GPU
whose sample is still running is not queued again: it is reported *stale* (its previous
sample, ``stale=True``) until the call returns, and what that late call read is kept. Workers
are daemons, so a hung one never blocks interpreter exit.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple, Protocol

from gputop.model import GpuSample

MAX_STALL = 0.1
"""Seconds at most that a queue nobody takes from waits before another worker is woken."""


class Sampler(Protocol):
    """What the pool runs: ``GpuSampler`` (one per GPU, used by one thread at a time)."""

    @property
    def index(self) -> int:
        """The GPU's NVML index, also its position in the pool."""
        ...

    def sample(self) -> GpuSample:
        """Read the GPU now."""
        ...


class _Answer(NamedTuple):
    """A GPU's sample (or the exception its sampling raised) for one round."""

    gpu: int
    round_id: int
    sample: GpuSample | None
    error: BaseException | None


class SamplerPool:
    """Samples every GPU on worker threads; :meth:`sample` returns within ``deadline`` s.

    Args:
        samplers: one per GPU, ``samplers[i].index == i``.
        deadline: seconds each :meth:`sample` waits at most.
        stall: seconds without progress on the queue before another worker is woken
            (default: an eighth of the deadline, at most :data:`MAX_STALL`).
        name: the workers' thread names are ``name-0``, ``name-1``...
    """

    def __init__(
        self,
        samplers: Sequence[Sampler],
        deadline: float,
        *,
        stall: float | None = None,
        name: str = "gputop-nvml",
    ) -> None:
        self._samplers = tuple(samplers)
        self._deadline = deadline
        self._stall = stall if stall is not None else min(deadline / 8, MAX_STALL)
        self._name = name
        # deque appends and pops are atomic: workers claim jobs and post answers without a lock.
        self._todo: deque[tuple[int, int]] = deque()
        self._answers: deque[_Answer] = deque()
        self._done: queue.SimpleQueue[None] = queue.SimpleQueue()
        """A worker ran out of jobs: the polling thread looks at the answers."""
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()
        """True: a sleeping worker takes jobs; False: it ends."""
        self._lock = threading.Lock()
        self._sleeping = 0
        self._wakes = 0
        """Wake-ups sent that no worker has taken yet."""
        self._threads: list[threading.Thread] = []
        self._busy = [False] * len(self._samplers)
        """Queued or being sampled, and its answer not booked yet (possibly hung in NVML)."""
        self._last: list[GpuSample | None] = [None] * len(self._samplers)
        self._round = 0

    @property
    def threads(self) -> int:
        """Workers started so far (one unless a GPU was stuck at some point)."""
        return len(self._threads)

    def sample(self) -> list[GpuSample]:
        """Every GPU's sample, in index order; one not done by the deadline is stale.

        Raises:
            BaseException: what a sampler raised (on the tick its answer is booked).
        """
        self._round += 1
        current = self._round
        fresh: dict[int, GpuSample] = {}
        while True:  # leftover signals from answers that came after an earlier deadline
            try:
                self._done.get_nowait()
            except queue.Empty:
                break
        self._book(current, fresh)
        busy = self._busy
        jobs = [(index, current) for index in range(len(busy)) if not busy[index]]
        if jobs:
            for index, _ in jobs:
                busy[index] = True
            with self._lock:
                self._todo.extend(jobs)
                self._wake_one()
            try:
                self._wait(current, fresh, len(jobs))
            finally:
                # Jobs nobody took are withdrawn: the next poll asks for those GPUs afresh.
                self._withdraw()
        last = self._last
        for index, sample in fresh.items():
            last[index] = sample
        return [
            fresh.get(index) or replace(last[index] or GpuSample(index=index), stale=True)
            for index in range(len(busy))
        ]

    def _wait(self, current: int, fresh: dict[int, GpuSample], waiting: int) -> None:
        todo = self._todo
        end = time.monotonic() + self._deadline
        while len(fresh) < waiting:
            left = end - time.monotonic()
            if left <= 0:
                break
            queued = len(todo)
            try:
                self._done.get(timeout=min(left, self._stall) if queued else left)
            except queue.Empty:
                if queued and len(todo) == queued:
                    # Nobody took a job for a while: a worker is stuck (or slow) in NVML.
                    with self._lock:
                        self._wake_one()
            self._book(current, fresh)

    def _withdraw(self) -> None:
        while True:
            try:
                index, _ = self._todo.popleft()
            except IndexError:
                return
            self._busy[index] = False

    def _book(self, current: int, fresh: dict[int, GpuSample]) -> None:
        """Take in the workers' answers: this round's into ``fresh``, older ones as the
        GPU's last sample."""
        answers = self._answers
        while True:
            try:
                answer = answers.popleft()
            except IndexError:
                return
            self._busy[answer.gpu] = False
            if answer.error is not None:
                raise answer.error
            assert answer.sample is not None
            if answer.round_id == current:
                fresh[answer.gpu] = answer.sample
            else:
                self._last[answer.gpu] = answer.sample

    def _wake_one(self) -> None:
        """Have one more worker take jobs: a sleeping one, else a new one (caller holds the
        lock)."""
        if self._sleeping > self._wakes:
            self._wakes += 1
            self._wake.put(True)
        elif len(self._threads) < len(self._samplers):
            thread = threading.Thread(
                target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _work(self) -> None:
        todo = self._todo
        answers = self._answers
        samplers = self._samplers
        while True:
            took = False
            while True:
                try:
                    index, round_id = todo.popleft()
                except IndexError:
                    break
                took = True
                try:
                    sample = samplers[index].sample()
                except BaseException as error:  # handed to the polling thread, which re-raises
                    answers.append(_Answer(index, round_id, None, error))
                else:
                    answers.append(_Answer(index, round_id, sample, None))
            with self._lock:
                if todo:
                    continue  # queued while this worker was finishing
                self._sleeping += 1
            if took:
                # Said once asleep, so a poll that starts right away wakes this worker
                # rather than starting another.
                self._done.put(None)
            go = self._wake.get()
            with self._lock:
                self._sleeping -= 1
                self._wakes -= 1
            if not go:
                return

    def close(self) -> bool:
        """Withdraw queued jobs and let every worker end once it is out of NVML.

        Returns True when no sample is still running (no thread is inside NVML).
        """
        self._withdraw()
        with self._lock:
            for _ in self._threads:
                self._wakes += 1
                self._wake.put(False)
        while True:
            try:
                answer = self._answers.popleft()
            except IndexError:
                break
            self._busy[answer.gpu] = False
        return not any(self._busy)
