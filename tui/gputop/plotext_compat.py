"""plotext's private API, in one place: a figure of a chart's own.

plotext has no public way to make a figure. Its module-level functions draw on one figure that
the whole process shares, and they act on its active subplot: ``clear_figure()`` clears that
subplot alone, so the two panels of one GPU's charts outlived it into the next chart. Each
chart here is drawn on a figure of its own, made from plotext's private figure class, as
textual-plotext makes its widget's. That class is reached here only (the hygiene test walks
for any other reach), and only on the plotext release it was written for: on another, the
charts are left out, said once in one line on stderr (``patches.version_matches``), where an
import of a renamed class would have ended ``report`` in a traceback. ``GPUTOP_STOCK_TEXTUAL``
does not switch it: there is no stock figure to draw on instead.

The history screen's charts are textual-plotext's widget, which reaches plotext's private
modules itself; pyproject.toml pins plotext to the release written for, for both.
"""

from __future__ import annotations

from typing import Any

from gputop.patches import Patch, version_matches

PLOTEXT = "5.3"
"""The plotext release series the figure below was written against."""

OWN_FIGURE = Patch(
    "own_figure",
    fixes="each chart of report --charts (a recording's GPUs, the ledger's days) is drawn "
    "on a figure of its own, "
    "made from plotext's private figure class; plotext's public functions share one figure, "
    "whose layout outlives clear_figure()",
    gain="not a speed patch: without it no chart is drawn (not switched by "
    "GPUTOP_STOCK_TEXTUAL: there is no stock figure)",
    package="plotext",
    written_for=PLOTEXT,
    without="charts left out",
    needs=("plotext._figure:_figure_class._limit_size",),
)
PATCHES: tuple[Patch, ...] = (OWN_FIGURE,)


def new_figure() -> Any | None:
    """A figure of its own, not capped at the size of the terminal plotext detects (80
    columns when piped: the caller sizes it); None when charts are left out (another plotext
    release, said on stderr)."""
    # The check reads plotext's release beside its module: plotext is imported first.
    # Deferred: plotext (26-100 ms), only when a chart is drawn.
    import plotext  # noqa: F401

    if not version_matches(OWN_FIGURE):
        return None
    # Deferred: plotext's private module, only on the release it was written for.
    from plotext._figure import _figure_class

    figure = _figure_class()
    figure._limit_size(False, False)
    return figure
