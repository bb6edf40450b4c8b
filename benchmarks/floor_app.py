"""The floor of a Textual GPU monitor in the side-by-side runs (``bench_tui.py --floor``):
gputop's own live path (the same fake NVML, sampler, pipeline, history and diagnosis on the
poller thread, one message a tick to the UI), drawn by about the least a Textual app can
draw: one ``Static`` line per GPU (name, utilization, memory, power, temperature), updated
every tick. What gputop costs above it is its screen; what it costs below nvitop is what no
Textual app on this sampling can go under.

``install()`` puts a module of its own where ``gputop.ui.app`` is imported from, so that the
TUI command starts the floor app and gputop's screens and widgets are never loaded;
everything before the app (options, the driver, the source, the first tick) is gputop's own
start, except that Textual is imported by ``install()`` rather than beside the driver's start
(``cli/live.py``): the same instructions and memory, not the same wall-clock first frame.
The floor shows no process and no MIG activity, and says so to the sampler (``Tick.in_view``),
as gputop's screen says what it shows.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any, ClassVar


def install() -> None:
    """Make the TUI command start the floor app instead of gputop's screen."""
    # Imported here, as gputop's own app is: the benchmark's parent never loads Textual. And
    # as gputop imports it: asyncio without TLS (cli/no_tls.py), which Textual would load.
    from gputop.cli.no_tls import import_asyncio_without_tls

    import_asyncio_without_tls()
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from gputop.model import GpuSample
    from gputop.pipeline.loop import TickLoop
    from gputop.pipeline.tick import Tick
    from gputop.ui.messages import TickArrived

    def line(gpu: GpuSample) -> str:
        util = gpu.utilization.gpu
        used, total = gpu.memory.used, gpu.memory.total
        memory = "n/a" if used is None or total is None else f"{used >> 20}/{total >> 20} MiB"
        power = gpu.power.draw
        temp = gpu.temperature.gpu
        return (
            f"{gpu.index} {gpu.name}  util {'n/a' if util is None else f'{util:.0f}%'}"
            f"  mem {memory}  {'n/a' if power is None else f'{power:.0f} W'}"
            f"  {'n/a' if temp is None else f'{temp:.0f} C'}"
        )

    class FloorApp(App[int]):
        BINDINGS: ClassVar = [("q", "quit", "Quit")]

        def __init__(
            self,
            loop: TickLoop,
            settings: object = None,
            *,
            first_tick: Tick | None = None,
            after_first_frame: Callable[[], None] | None = None,
            **_ignored: Any,
        ) -> None:
            super().__init__()
            self.loop = loop
            self.first_tick = first_tick
            self.after_first_frame = after_first_frame
            self.fatal = None

        def get_driver_class(self) -> Any:
            # gputop's driver (its input thread sleeps until a key comes, where Textual's
            # wakes ten times a second) and gputop's repaints (only the lines that changed,
            # leaving no line for the collector), as gputop's app picks them (ui/compat.py).
            from gputop.ui.compat import apply_patches, driver_class

            apply_patches()
            return driver_class(super().get_driver_class())

        def compose(self) -> ComposeResult:
            gpus = self.first_tick.snapshot.gpus if self.first_tick is not None else ()
            for gpu in gpus:
                yield Static(line(gpu), markup=False)

        def _say_in_view(self, tick: Tick | None) -> None:
            # No process and no MIG activity on screen: the sampler reads neither (as
            # gputop's main screen tells it which processes it shows).
            if tick is not None and tick.in_view is not None:
                tick.in_view.show(())
                tick.in_view.show_mig_activity(False)

        def on_mount(self) -> None:
            self._say_in_view(self.first_tick)
            self.loop.start(self._deliver)
            # The collector, held while gputop starts, is let go after the first frame, as
            # gputop's app does (cli/startup.py): without it nothing was ever collected.
            if self.after_first_frame is not None:
                self.call_after_refresh(self.after_first_frame)

        def _deliver(self, tick: Tick) -> None:
            self.post_message(TickArrived(tick))

        def on_tick_arrived(self, message: TickArrived) -> None:
            self._say_in_view(message.tick)
            for static, gpu in zip(self.query(Static), message.tick.snapshot.gpus, strict=False):
                # About 70 columns a GPU on a 120-column terminal: the size does not change.
                static.update(line(gpu), layout=False)

        async def action_quit(self) -> None:
            self.loop.stop(0.5)
            self.exit(0)

    app_module = types.ModuleType("gputop.ui.app", "floor_app's app in place of gputop's")
    app_module.GputopApp = FloorApp  # type: ignore[attr-defined]
    sys.modules["gputop.ui.app"] = app_module
