"""Signalling the process under the process table's cursor: ask first, check that it is still
the process asked about, send, and say what happened."""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from textual.app import App

from gputop.ui.render.process_rows import (
    GroupRow,
    Kill,
    ProcessRow,
    TableRow,
    describe,
    send_signal,
    signal_refusal,
    target_pid,
)
from gputop.ui.toasts import toast

Report = Callable[[int | None, signal.Signals, str | None], None]
"""Told the outcome: (PID signalled or None, the signal, None when sent or why not)."""


def not_a_process(line: TableRow | None) -> str:
    """Why ``line`` (under the cursor, not a process's) cannot be signalled, in words."""
    if isinstance(line, GroupRow):
        return f"{line.holder.describe()} is not one process: Enter lists its processes"
    return "no process selected"


def say_signalled(app: App[Any], pid: int | None, sig: signal.Signals, error: str | None) -> None:
    """A toast of the outcome: sent, or why not."""
    target = "" if pid is None else f" to PID {pid}"
    if error is None:
        toast(app, "signal", f"Sent {sig.name}{target}", title="Signal")
    else:
        toast(
            app,
            "signal",
            f"{sig.name}{target}: {error}",
            title="Signal not sent",
            severity="error",
        )


class ProcessSignals:
    """Sends signals through ``kill`` (tests pass a fake) after the user said yes, and
    tells ``report`` each outcome."""

    def __init__(self, kill: Kill, report: Report) -> None:
        self._kill = kill
        self._report = report

    def ask(
        self,
        app: App[Any],
        line: TableRow | None,
        sig: signal.Signals,
        rows: Callable[[], Sequence[ProcessRow]],
    ) -> None:
        """Ask whether to send ``sig`` to the process of ``line``, then send it if it is
        still among ``rows`` (the latest processes) by then."""
        if not isinstance(line, ProcessRow):
            self._report(None, sig, not_a_process(line))
            return
        refusal = signal_refusal(line.process)
        if refusal is not None:
            self._report(line.process.pid, sig, refusal)
            return
        pid = target_pid(line.process)
        # Deferred: the dialog, at the key press that opens it (a start does not draw it).
        from gputop.ui.widgets.signal_dialog import SignalDialog

        dialog = SignalDialog(pid, sig, describe(line))
        app.push_screen(dialog, partial(self._answered, line, pid, sig, rows))

    def _answered(
        self,
        row: ProcessRow,
        pid: int,
        sig: signal.Signals,
        rows: Callable[[], Sequence[ProcessRow]],
        send: bool | None,
    ) -> None:
        if not send:
            return
        # The dialog may have been open over several ticks: a process gone from the latest
        # snapshot (or there with another start time) has exited, and its PID may already
        # name another process.
        current = next((r for r in rows() if r.key_text == row.key_text), None)
        started = row.process.start_time
        if current is None or (started is not None and current.process.start_time != started):
            self._report(pid, sig, "process has exited")
            return
        self._report(
            target_pid(current.process), sig, send_signal(self._kill, current.process, sig)
        )
