"""Telling a `--query-gpu` CSV log from its first bytes, and the columns of one written with
``noheader`` from the fields given to ``--query-gpu``."""

from __future__ import annotations

import re

from gputop.errors import BadCapture
from gputop.sources.csvlog.parse import Schema, is_header, parse_timestamp


def looks_like(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts a `--query-gpu` CSV log: its first
    non-blank line is a header of query fields, at least one of which gputop knows."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        line = text.decode("ascii").rstrip("\r")
    except UnicodeDecodeError:
        return False
    if not line or not is_header(line):
        return False
    try:
        Schema.parse(line)
    except BadCapture:
        return False
    return True


NOHEADER_HINT = (
    "a log written with `noheader` is read when its fields are named as they were given "
    "to nvidia-smi: --query-gpu timestamp,index,utilization.gpu,memory.used"
)

_QUERY_NAME = re.compile(r"[a-z_][a-zA-Z0-9_.]*")
_NUMBER_CELL = re.compile(r"-?[0-9]+(\.[0-9]+)? ?(%|MiB|W|MHz|C)?")


def query_schema(query: str) -> Schema:
    """The columns of a `noheader` log, from the fields given to `--query-gpu=`.

    Raises:
        BadCapture: not a comma list of field names, or none that gputop reads.
    """
    names = [name.strip() for name in query.split(",")]
    bad = next((name for name in names if not _QUERY_NAME.fullmatch(name)), None)
    if bad is not None:
        raise BadCapture(
            f"--query-gpu {query}: {bad!r} is not a field name (give them as to nvidia-smi: "
            "timestamp,index,utilization.gpu)"
        )
    try:
        return Schema.parse(", ".join(names))
    except BadCapture:
        raise BadCapture(
            f"--query-gpu {query}: names no field gputop reads (see `nvidia-smi "
            "--help-query-gpu`; gputop reads e.g. timestamp, index, utilization.gpu, "
            "memory.used, power.draw)"
        ) from None


def looks_like_noheader(head: bytes) -> bool:
    """Whether ``head`` starts a `--query-gpu` CSV log written with ``noheader``: its first
    line is cells of values (a time, numbers with or without their unit, `[N/A]`), no
    header."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        line = text.decode("ascii").rstrip("\r")
    except UnicodeDecodeError:
        return False
    cells = line.split(", ")
    if len(cells) < 2 or is_header(line):
        return False
    return any(
        parse_timestamp(cell) is not None
        or _NUMBER_CELL.fullmatch(cell)
        or (cell.startswith("[") and cell.endswith("]"))
        for cell in cells
    )
