"""A stand-in for the app `gputop serve` starts per browser: it speaks textual-serve's pipe
protocol just enough, and writes what it was told (its size, each resize) to a file.

``python fake_viewer.py LOG MODE``: MODE ``normal`` quits when asked, ``deaf`` never does
(an app stuck drawing), ``slow`` takes a second before it says it has started.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    log_path, mode = sys.argv[1], sys.argv[2]
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"pid {os.getpid()}\nsize {os.environ['COLUMNS']} {os.environ['ROWS']}\n")
        log.flush()
        if mode == "slow":
            time.sleep(1.0)
        sys.stdout.write("__GANGLION__\n")
        sys.stdout.flush()
        stdin = sys.stdin.buffer
        while True:
            head = stdin.read(5)
            if len(head) < 5:
                if mode == "deaf":
                    time.sleep(60)
                return
            payload = stdin.read(int.from_bytes(head[1:], "big"))
            if head[:1] != b"M":
                continue
            meta = json.loads(payload)
            if meta["type"] == "resize":
                log.write(f"resize {meta['width']} {meta['height']}\n")
                log.flush()
            elif meta["type"] == "quit" and mode != "deaf":
                return


if __name__ == "__main__":
    main()
