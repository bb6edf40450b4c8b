"""The README's "Recording formats" table names every format gputop replays, each with the
nvidia-smi command that makes it, and a bundled real file of each kind is read as the format
its row names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gputop.sources.recordings.formats import detect, format_names
from support.shortcuts import looks_like_pmon

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "snapshots"

# Row of the table -> (the `--format` name that reads it, a bundled real file of that kind).
ROWS = {
    "nvidia-smi XML": ("xml", "tesla-t4-v11.xml"),
    "`nvidia-smi -q` text": ("text", "h100-590-q.txt"),
    "dmon": ("dmon", "h100-590-dmon.txt"),
    "pmon": ("dmon", "h100-590-pmon.txt"),
    "`--query-gpu` CSV": ("csv", "gpu-log-v100s-miris.csv"),
    "`--query-gpu` CSV, `nounits`": ("csv", "query-gpu-8xh100-virtualclient.csv"),
    "`--query-gpu` CSV, `noheader`": ("csv", None),
    "`--query-compute-apps` CSV": ("csv", None),
    "gputop's `--log` CSV": ("gputop-csv", None),
}


def _table() -> dict[str, str]:
    """The "Recording formats" table of the README: format -> the command cell."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Recording formats\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]
    table: dict[str, str] = {}
    for row in rows:
        kind, command = row.strip().strip("|").split(" | ", 1)
        table[kind.strip()] = command.strip()
    return table


def test_every_format_has_a_row_with_its_command() -> None:
    table = _table()
    assert set(table) == set(ROWS)
    assert {name for name, _ in ROWS.values()} == set(format_names())
    for row, command in table.items():
        assert re.search(r"`nvidia-smi [^`]+`", command), row
    assert "-q -x " in table["nvidia-smi XML"] and "-q -x -l 1" in table["nvidia-smi XML"]
    assert "`nvidia-smi dmon " in table["dmon"] and "`nvidia-smi pmon " in table["pmon"]
    assert "--format=csv " in table["`--query-gpu` CSV"]
    assert "--format=csv,nounits " in table["`--query-gpu` CSV, `nounits`"]
    assert "--apps apps.csv" in table["`--query-compute-apps` CSV"]
    assert "--query-compute-apps=" in table["`--query-compute-apps` CSV"]


def test_the_noheader_row_names_the_fields_it_was_recorded_with() -> None:
    command = _table()["`--query-gpu` CSV, `noheader`"]
    assert "--format=csv,noheader " in command
    recorded = re.search(r"--query-gpu=(\S+) ", command)
    replayed = re.search(r"`--query-gpu (\S+)`", command)
    assert recorded is not None and replayed is not None
    assert recorded.group(1) == replayed.group(1)


@pytest.mark.parametrize("row", [row for row, (_, name) in ROWS.items() if name], ids=str)
def test_a_bundled_file_of_each_row_is_read_as_its_format(row: str) -> None:
    name, example = ROWS[row]
    assert example is not None
    found = detect((SNAPSHOTS / example).read_bytes()[:4096])
    assert found is not None and found.name == name


def _kind(path: Path) -> str | None:
    """The format of a bundled file, told by its content as gputop tells it."""
    head = path.read_bytes()[:4096]
    found = detect(head)
    if found is None:
        # A `noheader` CSV log cannot say what it is (it is read once its fields are named);
        # anything else gputop does not recognise is no recording of these formats.
        return "csv" if "noheader" in path.name and path.suffix == ".csv" else None
    if found.name == "dmon":
        return "pmon" if looks_like_pmon(head) else "dmon"
    return found.name


def test_the_per_format_counts_of_snapshots_readme_are_the_bundled_files() -> None:
    """snapshots/README.md says how many real recordings of each format are bundled: the
    counts are those of the files there, each told apart by its content."""
    counted: dict[str, int] = {}
    for path in SNAPSHOTS.iterdir():
        if path.is_file() and path.name != "README.md":
            kind = _kind(path)
            if kind is not None:
                counted[kind] = counted.get(kind, 0) + 1
    text = (SNAPSHOTS / "README.md").read_text()
    section = text.split("\n## Per format\n", 1)[1].split("\n#", 1)[0]
    names = {"`-q -x` XML": "xml", "`--query-gpu` CSV": "csv", "`-q` text": "text"}
    stated: dict[str, int] = {}
    for row in [line for line in section.splitlines() if line.startswith("| ")][2:]:
        kind, _command, files = (cell.strip() for cell in row.strip().strip("|").split(" | "))
        stated[names.get(kind, kind)] = int(files.split()[0])
    assert stated == counted
    assert all(count >= 5 for count in counted.values())
