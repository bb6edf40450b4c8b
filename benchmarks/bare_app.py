"""The yardstick of the start-up benchmarks: a bare Textual app with the widget kinds gputop
uses (a Static, a DataTable, a Footer), and nothing else. ``bench_tui`` times its first frame,
``bench_startup`` counts its instructions; both start it from here so they measure the same app.

Run as a script, it runs the app (``q`` quits).
"""

from __future__ import annotations

from typing import ClassVar

MARKER = "floor-marker"
"""Text of its first frame."""


def run() -> None:
    """Run the app until ``q``."""
    # Imported here: the benchmarks import this module without wanting Textual loaded.
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Footer, Static

    class Bare(App[None]):
        BINDINGS: ClassVar = [("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Static(MARKER)
            yield DataTable()
            yield Footer()

    Bare().run()


if __name__ == "__main__":
    run()
