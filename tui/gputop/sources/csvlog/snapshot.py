"""One snapshot of a `--query-gpu` CSV log, its bytes parsed into the model: rows of the
header's width are GPUs, the rows under a `--query-compute-apps` header its processes."""

from __future__ import annotations

from gputop.model import Snapshot
from gputop.sources.csvlog.data import LogData
from gputop.sources.csvlog.index import SnapshotIndex
from gputop.sources.csvlog.parse import (
    AppsSchema,
    Schema,
    is_apps_header,
    is_header,
    parse_block,
    without_processes,
)


def read_snapshot(data: bytes, schema: Schema, *, with_apps: bool) -> Snapshot:
    """The snapshot whose lines are ``data``, read by ``schema``; ``with_apps``: the log
    holds a `--query-compute-apps` query (else the snapshot says its processes are not
    known)."""
    width = schema.width
    rows = []
    processes = []
    apps: AppsSchema | None = None
    for line in data.decode("utf-8", "replace").split("\n"):
        line = line.rstrip("\r")
        if "a" <= line[:1] <= "z" and is_header(line):
            apps = AppsSchema.parse(line) if is_apps_header(line) else None
            continue
        cells = line.split(", ")
        if apps is not None:
            process = apps.process(cells) if len(cells) == apps.width else None
            if process is not None:
                processes.append(process)
        elif len(cells) == width:
            rows.append(cells)
    snapshot = parse_block(schema, rows, processes)
    if not with_apps:
        return without_processes(snapshot)
    return snapshot


def snapshot_at(data: LogData, index: SnapshotIndex, position: int, *, with_apps: bool) -> Snapshot:
    """The snapshot the index holds at ``position`` (>= 0), read from the log's bytes."""
    start = index.starts[position]
    rows = data.read(start, index.ends[position] - start)
    return read_snapshot(rows, index.schema_of(position), with_apps=with_apps)
