"""`--record FILE` appends only to a recording of this machine (or a new or empty file)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop.errors import BadArguments
from gputop.model import Snapshot
from gputop.sinks.record_check import check_appendable
from gputop.sinks.smi_xml import SmiXmlWriter, snapshot_to_xml
from gputop.sources.smi.recording import Recording
from support.shortcuts import snapshot_from_path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "snapshots"
FOUR = SNAPSHOTS / "rtx3090x4-procs-v12.xml"
FAKES = ROOT / "tests" / "fakes"


@pytest.fixture
def machine() -> Snapshot:
    return snapshot_from_path(FOUR)


def refused(path: Path, machine: Snapshot, *words: str) -> None:
    with pytest.raises(BadArguments) as caught:
        check_appendable(path, machine, compress=path.suffix == ".gz")
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"--record {path}: ")
    for word in words:
        assert word in message


def test_new_empty_and_blank_files_are_started(tmp_path: Path, machine: Snapshot) -> None:
    check_appendable(tmp_path / "new.xml", machine, compress=False)
    (tmp_path / "empty.xml").write_bytes(b"")
    check_appendable(tmp_path / "empty.xml", machine, compress=False)
    (tmp_path / "blank.xml").write_bytes(b"\n \n")
    check_appendable(tmp_path / "blank.xml", machine, compress=False)


def test_a_pipe_is_written_without_being_read(tmp_path: Path, machine: Snapshot) -> None:
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)
    check_appendable(fifo, machine, compress=False)  # returns: opening it to read would hang


def test_a_text_file_is_refused(tmp_path: Path, machine: Snapshot) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\n")
    refused(notes, machine, "not an nvidia-smi recording", "not XML")


def test_a_capture_of_another_machine_is_refused(tmp_path: Path, machine: Snapshot) -> None:
    other = tmp_path / "t4.xml"
    other.write_bytes((SNAPSHOTS / "tesla-t4-v11.xml").read_bytes())
    refused(other, machine, "records other GPUs (GPU-D37E67A5…)", "this machine's (GPU-0A66778F…")


def test_this_machines_recording_is_continued_even_cut_off_mid_document(
    tmp_path: Path, machine: Snapshot
) -> None:
    path = tmp_path / "run.xml"
    document = snapshot_to_xml(machine)
    path.write_bytes(document + document[: len(document) // 2])  # a killed recorder
    check_appendable(path, machine, compress=False)
    with SmiXmlWriter(path) as writer:
        writer.write(machine)
    with Recording.open(path) as recording:
        assert len(list(recording)) == 2  # the cut-off one is recovered past, not mixed in


def test_the_start_of_a_single_cut_off_document_is_checked_as_far_as_it_goes(
    tmp_path: Path, machine: Snapshot
) -> None:
    mine = tmp_path / "mine.xml"
    mine.write_bytes(snapshot_to_xml(machine)[:3000])
    check_appendable(mine, machine, compress=False)
    theirs = tmp_path / "theirs.xml"
    theirs.write_bytes((SNAPSHOTS / "tesla-t4-v11.xml").read_bytes()[:3000])
    refused(theirs, machine, "records other GPUs")


def test_gzip_must_match_the_name_and_end_whole(tmp_path: Path, machine: Snapshot) -> None:
    member = gzip.compress(snapshot_to_xml(machine), mtime=0)
    whole = tmp_path / "run.xml.gz"
    whole.write_bytes(member + member)
    check_appendable(whole, machine, compress=True)
    cut = tmp_path / "cut.xml.gz"
    cut.write_bytes(member + member[:-40])
    refused(cut, machine, "gzip member is cut off")
    misnamed = tmp_path / "run.xml"
    misnamed.write_bytes(member)
    refused(misnamed, machine, "holds gzip data", "does not end in .gz")
    plain = tmp_path / "plain.xml.gz"
    plain.write_bytes(snapshot_to_xml(machine))
    refused(plain, machine, "holds no gzip data")


def test_the_real_command_refuses_with_one_line_and_leaves_the_file(tmp_path: Path) -> None:
    target = tmp_path / "t4.xml"
    original = (SNAPSHOTS / "tesla-t4-v11.xml").read_bytes()
    target.write_bytes(original)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOP_", "CUDA_"))}
    environ.update(PYTHONPATH=str(FAKES), GPUTOP_FAKE_NVML=str(FOUR))
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--once", "--record", str(target)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "records other GPUs" in result.stderr
    assert target.read_bytes() == original


def test_the_refusal_names_distinct_uuids_and_only_a_few(tmp_path: Path, machine: Snapshot) -> None:
    from fakes.nvml_scenarios import plain_box

    eight = plain_box(8)
    recorded = tmp_path / "fake8.xml"
    recorded.write_bytes(snapshot_to_xml(eight))
    with pytest.raises(BadArguments) as caught:
        check_appendable(recorded, machine, compress=False)
    message = str(caught.value)
    theirs = message.split("records other GPUs (")[1].split(")")[0]
    names = theirs.split(" and ")[0].split(", ")
    assert len(names) == 3 and theirs.endswith(" and 5 more")
    assert len(set(names)) == 3  # fake GPUs share 28 characters: each shown far enough to differ
    uuids = {gpu.uuid.upper() for gpu in eight.gpus if gpu.uuid}
    for name in names:
        assert sum(uuid.startswith(name.removesuffix("…")) for uuid in uuids) == 1


def test_the_refusal_names_first_the_gpus_not_in_common(tmp_path: Path) -> None:
    from fakes.nvml_scenarios import plain_box

    recorded = tmp_path / "fake8.xml"
    recorded.write_bytes(snapshot_to_xml(plain_box(8)))
    with pytest.raises(BadArguments) as caught:
        check_appendable(recorded, plain_box(2), compress=False)
    message = str(caught.value)
    ours = [gpu.uuid.upper() for gpu in plain_box(8).gpus if gpu.uuid]
    theirs = message.split("records other GPUs (")[1].split(")")[0]
    # GPUs 2.. are the ones this machine lacks; GPUs 0 and 1 are in both.
    assert theirs.startswith(ours[2]) and ours[0] not in theirs
    assert message.endswith(f"than this machine's ({ours[0]}, {ours[1]}); record to another file")
