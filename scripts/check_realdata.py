"""Replay every capture of a collection with `gputop --once --json` and check its values.

Usage: python scripts/check_realdata.py [DIR]   (default ../shared/realdata)

The expected values are pulled from each file's raw text with plain regular expressions,
independently of gputop's parser: per GPU the product name, UUID, memory used and utilization,
and the number of GPUs and processes. Exit status 1 if any capture disagrees or fails.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

_GPU_BLOCK = re.compile(rb"<gpu id=.*?</gpu>", re.S)
_MIB = 1024 * 1024


def _first(pattern: bytes, block: bytes) -> str | None:
    match = re.search(pattern, block, re.S)
    return None if match is None else match.group(1).decode().strip()


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    match = re.match(r"\s*(\d+(?:\.\d+)?)", text)
    return None if match is None else float(match.group(1))


def expected(raw: bytes) -> list[dict[str, object]]:
    gpus: list[dict[str, object]] = []
    for block in _GPU_BLOCK.findall(raw):
        # MIG devices carry their own fb_memory_usage; the GPU's is the one outside them.
        block = re.sub(rb"<mig_devices>.*?</mig_devices>", b"", block, flags=re.S)
        memory = _first(rb"<fb_memory_usage>.*?<used>(.*?)</used>", block)
        used = _number(memory)
        gpus.append(
            {
                "name": _first(rb"<product_name>(.*?)</product_name>", block),
                "uuid": _first(rb"<uuid>(.*?)</uuid>", block),
                "memory_used": None if used is None else int(used * _MIB),
                "utilization_gpu": _number(_first(rb"<gpu_util>(.*?)</gpu_util>", block)),
                "processes": len(re.findall(rb"<process_info>", block)),
            }
        )
    return gpus


def check(path: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--replay", str(path), "--once", "--json"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or "Traceback" in result.stderr:
        return [f"exit {result.returncode}: {result.stderr.strip()}"]
    actual = json.loads(result.stdout)["gpus"]
    wanted = expected(path.read_bytes())
    problems = []
    if len(actual) != len(wanted):
        problems.append(f"{len(actual)} GPUs, expected {len(wanted)}")
    for index, (got, want) in enumerate(zip(actual, wanted, strict=False)):
        for key, value in want.items():
            have = len(got["processes"]) if key == "processes" else got[key]
            if have != value:
                problems.append(f"GPU {index} {key}: {have!r} != {value!r}")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/realdata")
    files = sorted(root.rglob("*.xml"))
    failed = 0
    for path in files:
        problems = check(path)
        failed += bool(problems)
        print(f"{'ok  ' if not problems else 'FAIL'} {path.relative_to(root)}")
        for problem in problems:
            print(f"       {problem}")
    print(f"{len(files) - failed} of {len(files)} captures replay with the right values")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
