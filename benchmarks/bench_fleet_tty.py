"""`gputop cluster` on a terminal: the bytes it writes and the CPU it takes, side by side.

The bundled dcgm-exporter expositions (``snapshots/dcgm/``, one HTTP server each) scraped
every second by a real Prometheus on 127.0.0.1; the real `gputop cluster --prometheus URL`
of each checkout given (``--code DIR``, a ``git archive``; default this one) on a 120x40
pseudo-terminal, measured after ``--warmup`` s for ``--seconds`` s as ``bench_tui.py``
measures the single-box view (CPU of the process, bytes written to the terminal, RSS). The
checkouts take turns within each round. ``--refresh`` is the fleet's (5 s by default, as
the command's); ``--open`` measures the first node's screen (Enter once the fleet is drawn:
its GPU panels, moving with each refresh) instead of the fleet's.

Run: ``.venv/bin/python benchmarks/bench_fleet_tty.py --code /tmp/main --code .
[--rounds 3] [--seconds 30] [--warmup 8] [--refresh 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "benchmarks")]

import bench_tui  # noqa: E402
from support.prometheus import running_prometheus, serving  # noqa: E402

EXPOSITIONS = sorted((REPO / "snapshots" / "dcgm").glob("*.prom"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", type=Path, help="a checkout (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--refresh", type=float, default=5.0)
    parser.add_argument("--open", action="store_true", help="measure the first node's screen")
    args = parser.parse_args()
    codes = [path.resolve() for path in (args.code or [REPO])]
    texts = [path.read_text() for path in EXPOSITIONS]
    runs: dict[Path, list[bench_tui.Run]] = {code: [] for code in codes}
    with serving(texts) as servers, running_prometheus([s.target for s in servers]) as server:
        server.wait_for("up == 1", len(servers))
        command = [
            sys.executable,
            "-m",
            "gputop",
            "cluster",
            "--prometheus",
            server.url,
            "--refresh",
            f"{args.refresh:g}",
        ]
        screen = "the first node's screen" if args.open else "the fleet"
        print(
            f"{len(servers)} exporters, Prometheus scraping every 1 s, `gputop cluster "
            f"--refresh {args.refresh:g}` on 120x40, {screen}, {args.seconds:g} s after "
            f"{args.warmup:g} s"
        )
        for round_number in range(args.rounds):
            order = codes if round_number % 2 == 0 else codes[::-1]
            for code in order:
                run = bench_tui.run_on_pty(
                    command,
                    b"nodes",
                    args.seconds,
                    args.warmup,
                    extra_env={"PYTHONPATH": str(code / "tui")},
                    keys=b"\r" if args.open else b"",
                )
                runs[code].append(run)
                print(f"  round {round_number + 1}, {code}: {_row(run)}", flush=True)
    for code, taken in runs.items():
        cpu = statistics.median(_cpu(run) for run in taken)
        sent = statistics.median(_bytes(run) for run in taken)
        rss = statistics.median(run.rss_kib / 1024 for run in taken)
        print(f"median, {code}: CPU {cpu:.2f} % of a core, {sent:.0f} bytes/s, RSS {rss:.1f} MiB")


def _cpu(run: bench_tui.Run) -> float:
    return 100 * run.cpu_s / run.seconds


def _bytes(run: bench_tui.Run) -> float:
    return run.bytes_out / run.seconds


def _row(run: bench_tui.Run) -> str:
    return (
        f"CPU {_cpu(run):.2f} % of a core, {_bytes(run):.0f} bytes/s, "
        f"RSS {run.rss_kib / 1024:.1f} MiB"
    )


if __name__ == "__main__":
    main()
