"""Opening the sinks the command line asks for: `--record` (XML) and `--log` (CSV)."""

from __future__ import annotations

from gputop.cli.options import Options
from gputop.model import Snapshot
from gputop.sinks.fanout import Sink, SnapshotSinks


def open_sinks(options: Options, machine: Snapshot | None = None) -> SnapshotSinks | None:
    """Open what `--record` and `--log` ask for, or None when neither is given.

    Opening happens before the first tick so that an unwritable path is one clear error
    before the UI takes the terminal. ``machine`` (a first snapshot) lets `--record` refuse
    a file that records another machine.
    """
    sinks: list[Sink] = []
    try:
        if options.record is not None:
            from gputop.sinks.record_check import check_appendable
            from gputop.sinks.smi_xml import SmiXmlWriter

            compress = options.record.suffix == ".gz"
            check_appendable(options.record, machine, compress=compress)
            sinks.append(SmiXmlWriter(options.record, compress=compress))
        if options.log is not None:
            from gputop.sinks.csv_log import CsvLogger

            sinks.append(CsvLogger(options.log))
    except BaseException:
        SnapshotSinks(sinks).close()
        raise
    return SnapshotSinks(sinks) if sinks else None
