"""An NvmlSource over a FakeNvml, set up and torn down in one ``with``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pynvml  # noqa: TID251 -- the source under test is handed the real pynvml

from fakes.nvml_fake import FakeNvml
from fakes.nvml_install import installed
from gputop.sources.nvml.device import SLOW_REFRESH
from gputop.sources.nvml.source import Enrich, HostLookup, NvmlSource


@contextmanager
def nvml_source(
    fake: FakeNvml,
    *,
    deadline: float | None = None,
    enrich: Enrich | HostLookup | None = None,
    slow_refresh: float = SLOW_REFRESH,
) -> Iterator[NvmlSource]:
    """Install ``fake``, initialise NVML through pynvml and yield a source over it."""
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(
            pynvml,
            deadline=deadline,
            enrich=enrich,
            host="testhost",
            shutdown_on_close=True,
            slow_refresh=slow_refresh,
        )
        try:
            yield source
        finally:
            source.close()
