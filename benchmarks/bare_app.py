"""The yardstick of the start-up benchmarks: a bare Textual app with the widget kinds gputop
uses (a Static, a DataTable, a Footer), and nothing else. ``bench_tui`` times its first frame,
``bench_startup`` counts its instructions; both start it from here so they measure the same app.

Given rows, its table holds them from its first frame on: what a Textual app keeps for the rows
gputop's process table shows (``bench_tui.py --side-by-side --bare-rows``). Still, they never
change; live, the TIME cell of each row on screen moves on every second, as gputop's do in a
process's first minute.

Run as a script, it runs the app (``q`` quits).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

MARKER = "floor-marker"
"""Text of its first frame."""


def run(
    columns: Sequence[str] = (), rows: Sequence[Sequence[str]] = (), live: bool = False
) -> None:
    """Run the app until ``q``, its table titled ``columns`` and holding ``rows``; ``live``:
    the column titled TIME counts the seconds of the rows on screen."""
    # Imported here: the benchmarks import this module without wanting Textual loaded.
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Footer, Static

    class Bare(App[None]):
        BINDINGS: ClassVar = [("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Static(MARKER)
            yield DataTable()
            yield Footer()

        def on_mount(self) -> None:
            if columns:
                table = self.query_one(DataTable)
                self.time_key = table.add_columns(*columns)[list(columns).index("TIME")]
                self.shown_rows = table.add_rows(rows)
                if live:
                    self.counted = 30
                    self.set_interval(1, self.count)

        def count(self) -> None:
            table = self.query_one(DataTable)
            self.counted += 1
            first = table.scroll_offset.y
            for row_key in self.shown_rows[first : first + table.size.height]:
                table.update_cell(row_key, self.time_key, f"0:{self.counted % 60:02d}")

    Bare().run()


if __name__ == "__main__":
    run()
