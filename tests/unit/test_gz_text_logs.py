"""Gzipped text logs (`nvidia-smi -q -l 5 | gzip > run.txt.gz`, dmon, pmon) read as the
plain files do: told by content, replayed, reported; a cut-off gzip is read to where it
stops, with a warning."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gputop.sources.recordings.formats import open_recording
from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
TEXT_LOGS = ["h100-mig-590-q-l.txt", "h200-mig-590-dmon.txt", "l40s-595-pmon.txt"]


def _gzipped(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.gz"
    path.write_bytes(gzip.compress((SNAPSHOTS / name).read_bytes()))
    return path


@pytest.mark.parametrize("name", TEXT_LOGS)
def test_a_gzipped_text_log_reads_as_the_plain_one(tmp_path: Path, name: str) -> None:
    packed = _gzipped(tmp_path, name)
    with open_recording(SNAPSHOTS / name) as plain, open_recording(packed) as inflated:
        assert len(inflated) == len(plain) > 0
        assert list(inflated) == list(plain)
        assert inflated.path == packed


@pytest.mark.parametrize("name", TEXT_LOGS)
def test_replay_and_report_of_a_gzipped_text_log(tmp_path: Path, name: str) -> None:
    packed = _gzipped(tmp_path, name)
    for args in (["--replay", "{}", "--json", "--at", "-1"], ["report", "{}", "--json"]):
        plain = gputop(*(SNAPSHOTS / name if a == "{}" else a for a in args))
        inflated = gputop(*(packed if a == "{}" else a for a in args))
        if args[0] == "report" and plain.returncode == 2:
            # A log with no times (dmon without -o DT, pmon): both refuse with the same line.
            assert inflated.returncode == 2
            original = plain.stderr.replace(str(SNAPSHOTS / name), "LOG")
            assert inflated.stderr.replace(str(packed), "LOG") == original
            assert "no times" in original
            continue
        assert inflated.returncode == 0, inflated.stderr
        expected = json.loads(plain.stdout)
        got = json.loads(inflated.stdout)
        if "source" in got:
            assert got.pop("source") == str(packed)
            expected.pop("source")
            for report in (got, expected):
                report["warnings"] = [w.split(": ", 1)[1] for w in report["warnings"]]
        assert got == expected


def test_format_text_names_a_gzipped_log_too(tmp_path: Path) -> None:
    packed = _gzipped(tmp_path, "h100-mig-590-q-l.txt")
    with open_recording(packed, format_name="text") as log:
        assert len(log) == 2


def test_a_cut_off_gzip_is_read_to_where_it_stops_with_a_warning(tmp_path: Path) -> None:
    whole = gzip.compress((SNAPSHOTS / "h100-mig-590-q-l.txt").read_bytes())
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    result = gputop("report", cut, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["snapshots"] >= 1
    assert not report["complete"]
    assert any("the data stopped early" in w for w in report["warnings"])
    assert "Traceback" not in result.stderr
