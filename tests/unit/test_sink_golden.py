"""`--json` and `--log` stay byte-identical: every bundled capture, and one sample with every
field set, against the output recorded from the code before the field table
(``tests/data/sink_golden/``).

A change that means to change the output regenerates the files with
``python tests/unit/test_sink_golden.py`` and says so in its commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gputop.model import Snapshot
from gputop.sinks.csv_log import CsvLogger
from gputop.sinks.json import snapshot_json
from support.every_field import EVERY_FIELD
from support.shortcuts import snapshot_from_path

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = REPO_ROOT / "tests" / "data" / "sink_golden"
CAPTURES = sorted((REPO_ROOT / "snapshots").glob("*.xml"))


def _snapshots() -> dict[str, Snapshot]:
    cases = {path.stem: snapshot_from_path(path) for path in CAPTURES}
    cases["every-field"] = EVERY_FIELD
    return cases


def outputs(name: str, snapshot: Snapshot, tmp: Path) -> dict[str, bytes]:
    """What `--json` (one snapshot), `--json --count N` (one a line) and `--log` write."""
    log = tmp / f"{name}.csv"
    with CsvLogger(log) as logger:
        logger.write(snapshot)
        logger.write(snapshot)
    return {
        f"{name}.json": (snapshot_json(snapshot, indent=2) + "\n").encode(),
        f"{name}.jsonl": (snapshot_json(snapshot, indent=None) + "\n").encode(),
        f"{name}.csv": log.read_bytes(),
    }


def test_every_bundled_capture_has_its_golden_files() -> None:
    names = {path.name for path in GOLDEN.iterdir()}
    for capture in CAPTURES:
        assert f"{capture.stem}.json" in names, capture.name
    assert len(CAPTURES) >= 11


@pytest.mark.parametrize("name", sorted(_snapshots()))
def test_output_is_byte_identical_to_the_recorded(name: str, tmp_path: Path) -> None:
    for file, data in outputs(name, _snapshots()[name], tmp_path).items():
        assert data == (GOLDEN / file).read_bytes(), file


def _regenerate() -> None:
    import tempfile

    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, snapshot in _snapshots().items():
            for file, data in outputs(name, snapshot, Path(tmp)).items():
                (GOLDEN / file).write_bytes(data)


if __name__ == "__main__":
    _regenerate()
    sys.exit(0)
