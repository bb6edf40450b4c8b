"""Speed and memory of the nvidia-smi XML replay reader on a large stream.

Builds a stream of about ``--mb`` MB by concatenating the bundled real captures
(``snapshots/*.xml``) as ``nvidia-smi -q -x -l 1`` would write them, one second apart, in a
temporary directory. As in a real recording, each document's readings differ from the last
time the same GPU was seen (utilization, temperature, power draw, PCIe throughput, fan and
clocks of busy GPUs; busy and idle phases of two minutes), while names, UUIDs, limits, ECC
counters and the like stay; ``--static`` repeats the captures byte for byte instead (the
stream measured before the reader remembered repeated children: it flatters it now). Then
measures, each in a fresh child process pinned to one core (so the peak RSS of one
measurement does not pollute the next):

- read-through: ``Recording.open`` then iterating every snapshot (every document parsed);
  MB/s and snapshots/s;
- first snapshot: ``Recording.open`` + ``snapshot(0)``;
- seek to the middle: ``len()`` + ``snapshot(len // 2)`` on a freshly opened recording;
- seek by time: ``index_at(t)`` + ``snapshot`` of the middle's timestamp, freshly opened;
- the same read-through of a gzip of the stream (with ``--gz``);
- with ``--tiny N``: the memory of the document index on N tiny documents (a root and a
  timestamp each, ~90 bytes: the most documents per byte a stream can hold), plain and
  gzipped: ``Recording.open`` + ``len()`` + a seek by index and one by time, peak RSS.

Usage: ``python benchmarks/bench_reader.py [--mb 300] [--repeat 3] [--static] [--gz]
[--tiny N] [--keep DIR] [--plain-values]``; ``--plain-values`` measures the reference path of
the value conversions (no memo). Each child leaves the collector as the command does.
Targets on one core: read-through >= 100 MB/s, peak RSS < 150 MB
(any input: the tiny documents too), first snapshot < 100 ms, seek < 200 ms. Times are
wall-clock (the read-through also shows MB/s of CPU time, which other load on the machine
disturbs less); the read-through prints the best and the median of its runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
_TIMESTAMP = re.compile(rb"<timestamp>[^<]*</timestamp>")
_START = datetime(2024, 9, 18, 8, 0, 0)
_GPU = re.compile(rb"(?=<gpu id=)")
_READING = re.compile(
    rb"<(gpu_util|memory_util|gpu_temp|power_draw|average_power_draw|instant_power_draw"
    rb"|tx_util|rx_util|fan_speed)>(\d+(?:\.\d+)?)( ?[A-Za-z%/]*)</\1>"
)
_CLOCKS = re.compile(rb"<clocks>.*?</clocks>", re.S)
_CLOCK = re.compile(rb"<(graphics_clock|sm_clock)>(\d+) MHz</\1>")

TARGETS = {
    "readthrough_mb_s": (">=", 100.0),
    "peak_rss_mb": ("<", 150.0),
    "first_ms": ("<", 100.0),
    "seek_middle_ms": ("<", 200.0),
    "seek_time_ms": ("<", 200.0),
}


def vary(document: bytes, second: int, machine: int) -> bytes:
    """``document`` (capture number ``machine``) with the readings of second ``second``.

    Each GPU is busy two thirds of the time, in phases of two minutes: busy, its utilization,
    power draw, PCIe throughput and clocks change every second, its temperature every 30 s
    and its fan every 10 s; idle, its power draw and PCIe throughput still wander a little.
    """
    parts = _GPU.split(document)
    out = [parts[0]]
    for gpu, part in enumerate(parts[1:]):
        busy = (second // 120 + gpu + machine) % 3 != 0

        def reading(match: re.Match[bytes], gpu: int = gpu, busy: bool = busy) -> bytes:
            tag, number, unit = match.group(1), float(match.group(2)), match.group(3)
            if tag == b"gpu_util":
                value = 85 + (second * 7 + gpu) % 15 if busy else 0
            elif tag == b"memory_util":
                value = 30 + (second * 3 + gpu) % 40 if busy else 0
            elif tag == b"gpu_temp":
                value = int(number) + (second // 30 + gpu) % 6 + (15 if busy else 0)
            elif tag in (b"tx_util", b"rx_util"):
                value = (second * 37 + gpu * 11) % 20000 if busy else (second % 3) * 10
            elif tag == b"fan_speed":
                value = int(number) + ((second // 10 + gpu) % 20 if busy else 0)
            else:  # watts, with two decimals
                step = (second * 13 + gpu * 7) % (5000 if busy else 40)
                return b"<%s>%.2f%s</%s>" % (tag, number + step / 100, unit, tag)
            return b"<%s>%d%s</%s>" % (tag, value, unit, tag)

        def clock(match: re.Match[bytes], gpu: int = gpu) -> bytes:
            tag, value = match.group(1), int(match.group(2)) + ((second + gpu) % 8) * 15
            return b"<%s>%d MHz</%s>" % (tag, value, tag)

        part = _READING.sub(reading, part)
        if busy:
            part = _CLOCKS.sub(lambda block: _CLOCK.sub(clock, block.group(0)), part, count=1)
        out.append(part)
    return b"".join(out)


def build_stream(path: Path, megabytes: float, static: bool = False) -> int:
    """Write captures one after another, each stamped a second after the previous one and,
    unless ``static``, with that second's readings (``vary``)."""
    captures = [file.read_bytes() for file in sorted(SNAPSHOTS.glob("*.xml"))]
    if not captures:
        raise SystemExit(f"no captures in {SNAPSHOTS}")
    target = int(megabytes * 1_000_000)
    written = 0
    count = 0
    with path.open("wb") as out:
        while written < target:
            for machine, capture in enumerate(captures):
                moment = _START + timedelta(seconds=count)
                stamp = moment.strftime("<timestamp>%a %b %d %H:%M:%S %Y</timestamp>").encode()
                document = _TIMESTAMP.sub(stamp, capture, count=1)
                if not static:
                    document = vary(document, count, machine)
                out.write(document)
                if not document.endswith(b"\n"):
                    out.write(b"\n")
                written += len(document) + 1
                count += 1
                if written >= target:
                    break
    return count


def build_tiny(path: Path, documents: int) -> None:
    """``documents`` tiny documents, one second apart: the index's worst case per byte."""
    batch = 10_000
    with path.open("wb") as out:
        for first in range(0, documents, batch):
            out.write(
                b"".join(
                    b"<nvidia_smi_log><timestamp>%s</timestamp></nvidia_smi_log>\n"
                    % (_START + timedelta(seconds=n)).strftime("%a %b %d %H:%M:%S %Y").encode()
                    for n in range(first, min(first + batch, documents))
                )
            )


def _rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


PLAIN_VALUES = "BENCH_PLAIN_VALUES"
"""Set (by ``--plain-values``): the children convert every element text afresh."""


def _as_the_command_does() -> None:
    """The collector as the `gputop` command leaves it once running (``gputop.cli.startup``:
    start-up frozen, a young generation of 20,000): the reader no longer pauses it itself."""
    try:
        from gputop.cli.startup import hold_collection, release_collection
    except ImportError:
        return
    hold_collection()
    release_collection()


def _plain_values() -> None:
    """The reference path of ``gputop.sources.smi.values``: no memo of conversions."""
    from gputop.sources.smi import values

    def convert(self: Any, text: str | None) -> Any:
        return self._convert(text)

    values._Memo.__missing__ = convert  # type: ignore[method-assign]


def child(mode: str, path: Path) -> dict[str, Any]:
    """One measurement, run in a fresh interpreter."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    _as_the_command_does()
    if os.environ.get(PLAIN_VALUES):
        _plain_values()
    from gputop.sources.smi.recording import Recording

    size = path.stat().st_size
    rss_before = _rss_mb()
    result: dict[str, Any] = {"mode": mode}
    if mode in ("readthrough", "readthrough_gz"):
        start = time.perf_counter()
        cpu_start = time.process_time()
        count = 0
        gpus = 0
        with Recording.open(path) as recording:
            for snapshot in recording:
                count += 1
                gpus += len(snapshot.gpus)
            warnings = list(recording.warnings)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        result |= {
            "seconds": elapsed,
            "snapshots": count,
            "gpus": gpus,
            "mb_s": size / elapsed / 1e6,
            "cpu_mb_s": size / cpu / 1e6,
            "snapshots_s": count / elapsed,
            "warnings": warnings,
        }
    elif mode == "first":
        start = time.perf_counter()
        recording = Recording.open(path)
        snapshot = recording.snapshot(0)
        result["ms"] = (time.perf_counter() - start) * 1000
        result["gpus"] = len(snapshot.gpus)
        recording.close()
    elif mode == "seek_middle":
        recording = Recording.open(path)
        start = time.perf_counter()
        count = len(recording)
        snapshot = recording.snapshot(count // 2)
        result["ms"] = (time.perf_counter() - start) * 1000
        result["index"] = count // 2
        result["timestamp"] = str(snapshot.timestamp)
        recording.close()
    elif mode == "seek_time":
        # The time to look for is known in advance: the stream's middle second.
        with Recording.open(path) as probe:
            middle = len(probe) // 2
            moment = probe.timestamp(middle)
        assert moment is not None
        recording = Recording.open(path)
        start = time.perf_counter()
        index = recording.index_at(moment)
        snapshot = recording.snapshot(index)
        result["ms"] = (time.perf_counter() - start) * 1000
        result["index"] = index
        result["ok"] = index == middle and snapshot.timestamp == moment
        recording.close()
    elif mode == "index":
        start = time.perf_counter()
        with Recording.open(path) as recording:
            count = len(recording)
            halfway = recording.snapshot(count // 2)
            assert halfway.timestamp is not None
            found = recording.index_at(halfway.timestamp)
            result |= {"documents": count, "ok": found == count // 2}
        result["seconds"] = time.perf_counter() - start
    else:
        raise SystemExit(f"unknown mode {mode}")
    result["rss_mb"] = _rss_mb()
    result["rss_before_mb"] = rss_before
    return result


def measure(mode: str, path: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{completed.stderr}")
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=300, help="stream size in MB (default 300)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument(
        "--static", action="store_true", help="repeat the captures unchanged (no new readings)"
    )
    parser.add_argument("--gz", action="store_true", help="also read a gzip of the stream")
    parser.add_argument(
        "--tiny",
        type=int,
        default=0,
        metavar="N",
        help="also measure the index's memory on N tiny documents (e.g. 5900000)",
    )
    parser.add_argument("--keep", type=Path, help="build the stream in this directory, keep it")
    parser.add_argument(
        "--plain-values",
        action="store_true",
        help="convert every element text afresh (the reference path, without the memos)",
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_values:
        os.environ[PLAIN_VALUES] = "1"  # read by the children
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="gputop-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stream = workdir / "stream.xml"
    try:
        start = time.perf_counter()
        documents = build_stream(stream, args.mb, args.static)
        size = stream.stat().st_size
        print(
            f"stream: {size / 1e6:.0f} MB, {documents} documents "
            f"({len(list(SNAPSHOTS.glob('*.xml')))} bundled captures repeated, "
            f"{'unchanged' if args.static else 'with new readings every second'}), "
            f"built in {time.perf_counter() - start:.1f} s"
        )
        print(f"python {sys.version.split()[0]}, one core per measurement, best of {args.repeat}")
        figures: dict[str, float] = {}
        rss: list[float] = []

        runs = [measure("readthrough", stream) for _ in range(args.repeat)]
        best = max(runs, key=lambda run: run["mb_s"])
        rss += [run["rss_mb"] for run in runs]
        figures["readthrough_mb_s"] = best["mb_s"]
        median = statistics.median(run["mb_s"] for run in runs)
        print(
            f"read-through:      {best['mb_s']:7.1f} MB/s  {best['snapshots_s']:8.0f} snapshots/s"
            f"  ({best['snapshots']} snapshots, {best['gpus']} GPU samples, "
            f"{best['seconds']:.2f} s; {best['cpu_mb_s']:.1f} MB/s of CPU time; "
            f"peak RSS {best['rss_mb']:.0f} MB; median of {len(runs)} runs {median:.1f} MB/s)"
        )
        if best["warnings"]:
            print(f"  warnings: {best['warnings']}")
        for mode, label in (
            ("first", "first snapshot:   "),
            ("seek_middle", "seek to middle:   "),
            ("seek_time", "seek by time:     "),
        ):
            runs = [measure(mode, stream) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run["ms"])
            rss += [run["rss_mb"] for run in runs]
            figures[f"{mode}_ms"] = best["ms"]
            extra = ""
            if mode == "seek_time":
                extra = f", found the right document: {all(run['ok'] for run in runs)}"
            print(f"{label} {best['ms']:7.1f} ms  (peak RSS {best['rss_mb']:.0f} MB{extra})")
        figures["peak_rss_mb"] = max(rss)
        print(f"peak RSS, worst measurement: {max(rss):.0f} MB")

        if args.gz:
            packed = workdir / "stream.xml.gz"
            with stream.open("rb") as source, gzip.open(packed, "wb", compresslevel=6) as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
            run = measure("readthrough_gz", packed)
            print(
                f"read-through .gz:  {size / run['seconds'] / 1e6:7.1f} MB/s of XML "
                f"({packed.stat().st_size / 1e6:.0f} MB compressed; peak RSS "
                f"{run['rss_mb']:.0f} MB)"
            )

        if args.tiny:
            tiny = workdir / "tiny.xml"
            build_tiny(tiny, args.tiny)
            packed = workdir / "tiny.xml.gz"
            with tiny.open("rb") as source, gzip.open(packed, "wb", compresslevel=6) as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
            for label, file in (("tiny documents:   ", tiny), ("tiny, .gz:        ", packed)):
                run = measure("index", file)
                figures["peak_rss_mb"] = max(figures["peak_rss_mb"], run["rss_mb"])
                print(
                    f"{label} {run['documents']} documents ({file.stat().st_size / 1e6:.1f} MB):"
                    f" open + len + two seeks {run['seconds']:.1f} s, peak RSS "
                    f"{run['rss_mb']:.0f} MB, found the right document: {run['ok']}"
                )

        print("targets:")
        for name, (sense, limit) in TARGETS.items():
            value = figures[name]
            met = value >= limit if sense == ">=" else value < limit
            print(f"  {name:18} {value:8.1f} {sense} {limit:g}: {'met' if met else 'MISSED'}")
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
