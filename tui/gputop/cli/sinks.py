"""Opening the sinks the command line asks for: `--record` (XML) and `--log` (CSV)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop.cli.options import Options
from gputop.model import Snapshot

if TYPE_CHECKING:
    from gputop.sinks.fanout import Sink, SnapshotSinks


def open_sinks(options: Options, machine: Snapshot | None = None) -> SnapshotSinks | None:
    """Open what `--record` and `--log` ask for, or None when neither is given.

    Opening happens before the first tick so that an unwritable path is one clear error
    before the UI takes the terminal. ``machine`` (a first snapshot) lets `--record` refuse
    a file that records another machine.
    """
    if options.record is None and options.log is None:
        return None  # without importing the sinks: most starts write nothing
    # Deferred: the sinks, only for --record and --log (test_live_imports; issue 17: part of 20 M).
    from gputop.sinks.fanout import SnapshotSinks

    sinks: list[Sink] = []
    try:
        if options.record is not None:
            # Deferred: the XML writer, only for --record.
            from gputop.sinks.smi_xml import SmiXmlWriter

            check_machine(options, machine)
            sinks.append(SmiXmlWriter(options.record, compress=_compressed(options)))
        if options.log is not None:
            # Deferred: the CSV writer, only for --log.
            from gputop.sinks.csv_log import CsvLogger

            sinks.append(CsvLogger(options.log))
    except BaseException:
        SnapshotSinks(sinks).close()
        raise
    return SnapshotSinks(sinks) if sinks else None


def _compressed(options: Options) -> bool:
    return options.record is not None and options.record.suffix == ".gz"


def check_machine(options: Options, machine: Snapshot | None) -> None:
    """Refuse a `--record` file that is not a recording of ``machine`` (None: of any machine).

    Raises:
        BadArguments: it holds something else (one line saying what).
    """
    if options.record is None:
        return
    # Deferred: the check reads the file with the XML reader (57 ms, 47 modules), only for --record.
    from gputop.sinks.record_check import check_appendable

    check_appendable(options.record, machine, compress=_compressed(options))
