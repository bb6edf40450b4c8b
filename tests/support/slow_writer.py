"""A stand-in for `nvidia-smi -q -x -l 1`: writes documents slowly, to a file or stdout.

Run as ``python -m support.slow_writer [--out FILE] [--count N] [--every SEC] [--start N]``
(with ``tests`` on PYTHONPATH). Each document is written in two halves with a pause between,
so a reader following the output meets a partly written document at its end; documents
come from the bundled 4x RTX 3090 capture with values moved along ``support.apps.wave``
and timestamps one second apart from ``START`` (document ``n`` at ``START + n s``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from gputop.sinks.smi_xml import snapshot_to_xml
from support.apps import load, varied_stream

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


def documents(count: int, start: int = 0) -> list[bytes]:
    """Documents ``start`` to ``start + count - 1`` of the writer's stream, as XML."""
    stream = varied_stream(load(CAPTURE), start + count)
    return [snapshot_to_xml(snapshot) for snapshot in stream[start:]]


def main() -> None:
    """Write the documents, pausing ``--every`` seconds before each."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, help="append to this file (default: stdout)")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args()
    fd = sys.stdout.fileno()
    if args.out is not None:
        fd = os.open(args.out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for document in documents(args.count, args.start):
            time.sleep(args.every)
            half = len(document) // 2
            os.write(fd, document[:half])
            time.sleep(min(0.2, args.every / 2))
            os.write(fd, document[half:])
    except BrokenPipeError:
        pass  # the reader stopped: so does nvidia-smi
    finally:
        if args.out is not None:
            os.close(fd)


if __name__ == "__main__":
    main()
