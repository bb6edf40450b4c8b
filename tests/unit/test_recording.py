"""Recording: streams, gzip, directories and damaged files built from the bundled captures."""

from __future__ import annotations

import gzip
import os
import re
import tempfile
import threading
import tracemalloc
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.sources.smi import recording as recording_module
from gputop.sources.smi.recording import Recording

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
T0 = datetime(2024, 9, 18, 21, 34, 12)

# (capture, its first GPU's UUID): a document's identity after its timestamp is rewritten.
T4 = ("tesla-t4-v11.xml", "GPU-d37e67a5-91dd-3774-a5cb-99096249601a")
K520 = ("grid-k520-v7.xml", "GPU-cc96d6f4-7f66-e1fc-8179-a45dbd47664c")
A100 = ("a100-sxm4-80gb-mig-v12.xml", "GPU-513536b6-7d19-9063-b049-1e69664bb298")
RTX = ("rtx3090x4-procs-v12.xml", "GPU-8ad6666a-677c-9f0e-3b58-90220b309ddc")
ORDER = (T4, K520, A100, RTX)


def stamped(name: str, moment: datetime | None) -> bytes:
    """A bundled capture with its timestamp replaced (or removed)."""
    raw = (SNAPSHOTS / name).read_bytes()
    text = b"" if moment is None else moment.strftime("%a %b %e %H:%M:%S %Y").encode()
    return re.sub(rb"<timestamp>[^<]*</timestamp>", b"<timestamp>" + text + b"</timestamp>", raw)


def stream(captures: tuple[tuple[str, str], ...], separator: bytes = b"\n") -> bytes:
    """Captures one second apart from T0, as `nvidia-smi -q -x -l 1` writes them."""
    return separator.join(
        stamped(name, T0 + timedelta(seconds=number)) for number, (name, _) in enumerate(captures)
    )


def uuids(snapshots: Iterator[Snapshot] | list[Snapshot]) -> list[str | None]:
    return [snapshot.gpus[0].uuid for snapshot in snapshots]


def expected_uuids(captures: tuple[tuple[str, str], ...]) -> list[str | None]:
    return [uuid for _, uuid in captures]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_fds_under(directory: Path) -> int:
    """This process's descriptors on files in ``directory`` (deleted ones too)."""
    inside = str(directory) + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor among them)
        count += target.startswith(inside)
    return count


# --- streams ----------------------------------------------------------------------------


@pytest.mark.parametrize("separator", [b"\n", b"", b"\r\n\r\n", b"  \t\n"])
def test_stream_length_order_and_random_access(tmp_path: Path, separator: bytes) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER, separator))
    with Recording.open(path) as recording:
        assert len(recording) == 4
        assert recording.snapshot(2).gpus[0].uuid == A100[1]
        assert recording.snapshot(0).gpus[0].uuid == T4[1]
        assert recording.snapshot(3).gpus[0].uuid == RTX[1]
        assert recording.snapshot(-1).gpus[0].uuid == RTX[1]
        assert recording.snapshot(-4).gpus[0].uuid == T4[1]
        assert recording.snapshot(1).timestamp == T0 + timedelta(seconds=1)
        assert uuids(list(recording)) == expected_uuids(ORDER)
        assert recording.warnings == []


@pytest.mark.parametrize("index", [4, 100, -5])
def test_out_of_range_index(tmp_path: Path, index: int) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER))
    with Recording.open(path) as recording, pytest.raises(IndexError):
        recording.snapshot(index)
    with Recording.open(path) as recording, pytest.raises(IndexError):
        recording.timestamp(index)


def test_random_access_before_the_scan_reaches_the_end(tmp_path: Path) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER * 3))
    with Recording.open(path) as recording:
        # No len() first: asking for a later index extends the index as far as needed.
        assert recording.snapshot(6).gpus[0].uuid == A100[1]
        assert recording.timestamp(9) == T0 + timedelta(seconds=9)
        assert recording.snapshot(-1).gpus[0].uuid == RTX[1]
        assert len(recording) == 12


def test_timestamps_come_from_the_index_without_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER * 5))
    with Recording.open(path) as recording:

        def refuse(data: bytes) -> Snapshot:
            raise AssertionError("timestamp() must not parse documents")

        monkeypatch.setattr(recording_module, "parse_document", refuse)
        assert len(recording) == 20
        assert [recording.timestamp(i) for i in range(20)] == [
            T0 + timedelta(seconds=i) for i in range(20)
        ]
        assert recording.timestamp(-1) == T0 + timedelta(seconds=19)
        assert recording.index_at(T0 + timedelta(seconds=7)) == 7


def test_index_at(tmp_path: Path) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER * 2))
    with Recording.open(path) as recording:
        assert recording.index_at(T0) == 0
        assert recording.index_at(T0 + timedelta(seconds=5)) == 5
        # Between two documents: the one at or before.
        assert recording.index_at(T0 + timedelta(seconds=5, milliseconds=999)) == 5
        # Before the first: the first; after the last: the last.
        assert recording.index_at(T0 - timedelta(days=1)) == 0
        assert recording.index_at(T0 + timedelta(hours=5)) == 7


def test_index_at_unsorted(tmp_path: Path) -> None:
    # A directory named by host, not time: documents are not in time order.
    moments = [T0 + timedelta(seconds=s) for s in (20, 0, 10, 30)]
    path = tmp_path / "log.xml"
    path.write_bytes(
        b"\n".join(stamped(name, moment) for (name, _), moment in zip(ORDER, moments, strict=True))
    )
    with Recording.open(path) as recording:
        assert recording.index_at(T0 + timedelta(seconds=10)) == 2
        assert recording.index_at(T0 + timedelta(seconds=15)) == 2
        assert recording.index_at(T0 + timedelta(seconds=25)) == 0
        assert recording.index_at(T0 + timedelta(seconds=99)) == 3
        assert recording.index_at(T0 - timedelta(seconds=1)) == 0


def test_index_at_without_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(b"\n".join(stamped(name, None) for name, _ in ORDER))
    with Recording.open(path) as recording:
        assert recording.timestamp(1) is None
        assert recording.index_at(T0) == 0
        assert recording.snapshot(1).timestamp is None


def test_single_document(tmp_path: Path) -> None:
    with Recording.open(SNAPSHOTS / "rtx3090x4-procs-v12.xml") as recording:
        assert len(recording) == 1
        assert recording.timestamp(0) == datetime(2024, 9, 18, 21, 34, 12)
        assert len(recording.snapshot(0).gpus) == 4
        assert recording.warnings == []


def test_byte_order_mark_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "windows.xml"
    documents = [stamped(name, T0 + timedelta(seconds=i)) for i, (name, _) in enumerate(ORDER)]
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(d.replace(b"\n", b"\r\n") for d in documents))
    with Recording.open(path) as recording:
        assert uuids(list(recording)) == expected_uuids(ORDER)
        assert recording.timestamp(0) == T0
        assert recording.warnings == []


def test_inline_dtd_timestamp_is_indexed(tmp_path: Path) -> None:
    # Old drivers inline their DTD: the timestamp then lies several KB into the document.
    dtd = "".join(f"<!ELEMENT element_{n:03} (#PCDATA)>\n" for n in range(150)).encode()
    raw = stamped(K520[0], T0).replace(
        b'<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v7.dtd">',
        b"<!DOCTYPE nvidia_smi_log [\n" + dtd + b"]>",
    )
    assert raw.index(b"<timestamp>") > 4096
    path = tmp_path / "dtd.xml"
    path.write_bytes(raw + b"\n" + raw.replace(b"21:34:12", b"21:35:12"))
    with Recording.open(path) as recording:
        assert recording.timestamp(0) == T0
        assert recording.timestamp(1) == T0 + timedelta(minutes=1)
        assert recording.snapshot(1).gpus[0].uuid == K520[1]


@pytest.mark.parametrize("chunk", [97, 1000, 4096, 65536])
def test_document_boundaries_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # Small chunks put end tags across every kind of boundary.
    monkeypatch.setattr(recording_module, "_CHUNK", chunk)
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER * 2))
    with Recording.open(path) as recording:
        assert uuids(list(recording)) == expected_uuids(ORDER * 2)
        assert [recording.timestamp(i) for i in range(8)] == [
            T0 + timedelta(seconds=i) for i in range(8)
        ]
        assert recording.warnings == []


def test_document_larger_than_a_chunk(tmp_path: Path) -> None:
    process = (
        b"<process_info><pid>%d</pid><type>C</type><process_name>python</process_name>"
        b"<used_memory>1 MiB</used_memory></process_info>"
    )
    many = b"".join(process % pid for pid in range(1, 30001))
    big = stamped(T4[0], T0 + timedelta(seconds=1)).replace(b"<processes>", b"<processes>" + many)
    assert len(big) > 3 * (1 << 20)
    path = tmp_path / "log.xml"
    path.write_bytes(stamped(K520[0], T0) + big + stamped(A100[0], T0 + timedelta(seconds=2)))
    with Recording.open(path) as recording:
        assert len(recording) == 3
        assert len(recording.snapshot(1).gpus[0].processes) == 30002
        assert recording.snapshot(2).gpus[0].uuid == A100[1]


# --- damaged streams --------------------------------------------------------------------


def test_truncated_last_document(tmp_path: Path) -> None:
    data = stream(ORDER)
    cut = data[: data.rindex(b"<fb_memory_usage>")]
    path = tmp_path / "killed.xml"
    path.write_bytes(cut)
    with Recording.open(path) as recording:
        assert uuids(list(recording)) == expected_uuids(ORDER[:3])
        assert len(recording) == 3
        assert len(recording.warnings) == 1
        assert "incomplete last document" in recording.warnings[0]


def test_trailing_garbage(tmp_path: Path) -> None:
    path = tmp_path / "garbage.xml"
    path.write_bytes(stream(ORDER) + b"\nthis is not XML\x00\x01\n")
    with Recording.open(path) as recording:
        assert len(recording) == 4
        assert len(recording.warnings) == 1
        assert "trailing bytes" in recording.warnings[0]


def test_trailing_white_space_is_not_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "spaces.xml"
    path.write_bytes(stream(ORDER) + b"\n\n   \n")
    with Recording.open(path) as recording:
        assert len(recording) == 4
        assert recording.warnings == []


def test_malformed_document_in_the_middle(tmp_path: Path) -> None:
    documents = [stamped(name, T0 + timedelta(seconds=i)) for i, (name, _) in enumerate(ORDER)]
    documents[1] = documents[1].replace(b"</product_name>", b"</wrong_tag>", 1)
    path = tmp_path / "log.xml"
    path.write_bytes(b"\n".join(documents))
    with Recording.open(path) as recording:
        assert len(recording) == 4
        with pytest.raises(BadCapture, match="document 1"):
            recording.snapshot(1)
        assert recording.timestamp(1) == T0 + timedelta(seconds=1)
        assert uuids(list(recording)) == [T4[1], A100[1], RTX[1]]
        assert len(recording.warnings) == 1
        assert "skipped document 1" in recording.warnings[0]


def test_cut_off_document_followed_by_complete_ones(tmp_path: Path) -> None:
    # A recorder killed mid-document, then restarted appending to the same file.
    first = stamped(T4[0], T0)
    killed = stamped(K520[0], T0 + timedelta(seconds=1))
    rest = stream(ORDER[2:])
    path = tmp_path / "log.xml"
    path.write_bytes(first + killed[: len(killed) // 2] + rest)
    with Recording.open(path) as recording:
        assert len(recording) == 3
        # The cut-off head is glued to the next document: its timestamp, until parsed.
        assert recording.timestamp(1) == T0 + timedelta(seconds=1)
        assert uuids(list(recording)) == [T4[1], A100[1], RTX[1]]
        assert recording.timestamp(1) == T0  # the whole document's own (stamped first)
        assert len(recording.warnings) == 1
        assert "cut-off document" in recording.warnings[0]
        # Read again, the document is found directly, warned about once.
        assert recording.snapshot(1).gpus[0].uuid == A100[1]
        assert len(recording.warnings) == 1


def test_first_document_cut_from_the_front(tmp_path: Path) -> None:
    # `tail -c` of a long log starts inside a document.
    data = stream(ORDER)
    path = tmp_path / "tail.xml"
    path.write_bytes(data[200:])
    with Recording.open(path) as recording:
        with pytest.raises(BadCapture):
            recording.snapshot(0)
        assert uuids(list(recording)) == expected_uuids(ORDER[1:])
        assert "skipped document 0" in recording.warnings[0]


def test_no_document_end_within_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recording_module, "MAX_DOCUMENT_BYTES", 200_000)
    monkeypatch.setattr(recording_module, "_CHUNK", 50_000)
    path = tmp_path / "log.xml"
    path.write_bytes(stream(ORDER[:2]) + b"<nvidia_smi_log>" + b"x" * 1_000_000)
    with Recording.open(path) as recording:
        assert len(recording) == 2
        assert any("no document end" in warning for warning in recording.warnings)


# --- gzip -------------------------------------------------------------------------------


def test_gzip_single_member(tmp_path: Path) -> None:
    path = tmp_path / "log.xml.gz"
    path.write_bytes(gzip.compress(stream(ORDER * 2)))
    with Recording.open(path) as recording:
        assert len(recording) == 8
        assert recording.snapshot(-2).gpus[0].uuid == A100[1]
        assert uuids(list(recording)) == expected_uuids(ORDER * 2)
        assert recording.warnings == []


def test_gzip_multiple_members(tmp_path: Path) -> None:
    # `nvidia-smi -q -x | gzip >> log.gz` once a minute appends one member per run.
    path = tmp_path / "appended.gz"
    with path.open("ab") as out:
        for number, (name, _) in enumerate(ORDER):
            out.write(gzip.compress(stamped(name, T0 + timedelta(minutes=number)) + b"\n"))
    with Recording.open(path) as recording:
        assert uuids(list(recording)) == expected_uuids(ORDER)
        assert recording.timestamp(3) == T0 + timedelta(minutes=3)


def test_gzip_without_gz_suffix_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "log.xml"
    path.write_bytes(gzip.compress(stream(ORDER)))
    with Recording.open(path) as recording:
        assert len(recording) == 4


def test_truncated_gzip_keeps_the_complete_documents(tmp_path: Path) -> None:
    data = stream(ORDER * 3)
    packed = gzip.compress(data)
    path = tmp_path / "cut.xml.gz"
    path.write_bytes(packed[: int(len(packed) * 0.6)])
    with Recording.open(path) as recording:
        found = uuids(list(recording))
        assert 3 <= len(found) < 12
        assert found == expected_uuids(ORDER * 3)[: len(found)]
        assert any("cut off" in warning for warning in recording.warnings)


def test_gzip_that_is_not_gzip(tmp_path: Path) -> None:
    path = tmp_path / "fake.xml.gz"
    path.write_bytes(b"\x1f\x8b" + b"definitely not deflate data" * 10)
    with pytest.raises(BadCapture, match="gzip"):
        Recording.open(path)


# --- directories ------------------------------------------------------------------------


def test_directory_sorted_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "captures"
    folder.mkdir()
    names = ["c.xml", "a.xml", "d.xml.gz", "b.log"]
    # Written in another order than the names sort in, each stamped by its name's rank.
    for rank, (file_name, (capture, _)) in sorted(
        enumerate(zip(sorted(names), ORDER, strict=True)), key=lambda item: names.index(item[1][0])
    ):
        data = stamped(capture, T0 + timedelta(seconds=rank))
        (folder / file_name).write_bytes(gzip.compress(data) if file_name.endswith(".gz") else data)
    (folder / "README.txt").write_text("not a capture")
    (folder / "sub").mkdir()
    with Recording.open(folder) as recording:
        assert len(recording) == 4
        assert uuids(list(recording)) == expected_uuids(ORDER)
        assert recording.index_at(T0 + timedelta(seconds=2)) == 2


def test_directory_of_streams(tmp_path: Path) -> None:
    (tmp_path / "1.xml").write_bytes(stream(ORDER))
    (tmp_path / "2.xml").write_bytes(stream(ORDER[:2]))
    with Recording.open(tmp_path) as recording:
        assert uuids(list(recording)) == expected_uuids(ORDER + ORDER[:2])
        assert recording.snapshot(5).gpus[0].uuid == K520[1]


def test_directory_without_captures(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing")
    with pytest.raises(BadCapture, match=r"no \.xml"):
        Recording.open(tmp_path)


def test_directory_keeps_few_files_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recording_module, "_OPEN_FILES", 4)
    # The recording's files and its inflated copies (temporary files made here) are the
    # descriptors counted: the rest of the process (another test's threads) opens and closes
    # its own meanwhile.
    captures = tmp_path / "captures"
    captures.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for number in range(40):
        data = stamped(ORDER[number % 4][0], T0 + timedelta(seconds=number))
        name = f"{number:03}.xml" + (".gz" if number % 3 == 0 else "")
        (captures / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)

    def ours() -> int:
        return open_fds_under(tmp_path)

    assert ours() == 0
    with Recording.open(captures) as recording:
        assert len(recording) == 40
        assert 0 < ours() <= 4
        # Files closed to stay under the limit open again (gzip inflates again) on demand.
        assert recording.snapshot(0).gpus[0].uuid == T4[1]
        assert recording.snapshot(21).timestamp == T0 + timedelta(seconds=21)
        assert uuids(list(recording)) == expected_uuids(ORDER * 10)
        # A gzip still being inflated holds two descriptors: its file and the spool.
        assert 0 < ours() <= 2 * 4
        assert recording.warnings == []
    assert ours() == 0


def test_directory_with_an_unreadable_member(tmp_path: Path) -> None:
    (tmp_path / "1.xml").write_bytes(stamped(T4[0], T0))
    (tmp_path / "2.xml.gz").write_bytes(b"\x1f\x8bnot gzip at all")
    (tmp_path / "3.xml").write_bytes(stamped(A100[0], T0 + timedelta(seconds=2)))
    with Recording.open(tmp_path) as recording:
        assert uuids(list(recording)) == [T4[1], A100[1]]
        assert any("2.xml.gz" in warning and "gzip" in warning for warning in recording.warnings)


# --- pipes, files, memory ---------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_fifo(tmp_path: Path, compress: bool) -> None:
    # `nvidia-smi -q -x | gputop --replay /dev/stdin`: not seekable, read once.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = stream(ORDER)
    payload = gzip.compress(data) if compress else data

    def write() -> None:
        with fifo.open("wb") as pipe:
            pipe.write(payload)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with Recording.open(fifo) as recording:
            assert recording.snapshot(0).gpus[0].uuid == T4[1]
            assert uuids(list(recording)) == expected_uuids(ORDER)
            assert recording.snapshot(1).gpus[0].uuid == K520[1]
    finally:
        writer.join(timeout=10)


def test_close_releases_files(tmp_path: Path) -> None:
    path = tmp_path / "log.xml.gz"
    path.write_bytes(gzip.compress(stream(ORDER)))
    before = open_fds()
    recording = Recording.open(path)
    assert len(recording) == 4
    recording.close()
    assert open_fds() == before


def _big_stream(path: Path, megabytes: int) -> int:
    documents = [stamped(name, None) for name, _ in ORDER]
    count = 0
    with path.open("wb") as out:
        while out.tell() < megabytes * 1_000_000:
            out.write(documents[count % 4])
            count += 1
    return count


def test_scan_memory_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    count = _big_stream(path, 60)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        with Recording.open(path) as recording:
            tracemalloc.reset_peak()
            assert len(recording) == count
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One 1 MiB chunk plus the unconsumed part of a document, and the index itself.
    assert peak < 6 * 2**20, f"scan peaked at {peak / 2**20:.1f} MiB for {size / 1e6:.0f} MB"


def test_the_index_takes_a_few_bytes_a_document(tmp_path: Path) -> None:
    """Tiny documents are the index's worst case: 155 bytes each made 896 MB of 5.9 M."""
    count = 60_000
    path = tmp_path / "tiny.xml"
    path.write_bytes(
        b"".join(
            b"<nvidia_smi_log><timestamp>%s</timestamp></nvidia_smi_log>\n"
            % (T0 + timedelta(seconds=n)).strftime("%a %b %d %H:%M:%S %Y").encode()
            for n in range(count)
        )
    )
    tracemalloc.start()
    try:
        with Recording.open(path) as recording:
            tracemalloc.reset_peak()
            before, _ = tracemalloc.get_traced_memory()
            assert len(recording) == count
            held, _ = tracemalloc.get_traced_memory()
            middle = T0 + timedelta(seconds=count // 2)
            assert recording.index_at(middle) == count // 2  # no list of every stamp either
            assert recording.timestamp(count - 1) == T0 + timedelta(seconds=count - 1)
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_document = (held - before) / count
    assert per_document < 24, f"the index holds {per_document:.0f} bytes a document"
    assert peak - before < 2 * 2**20 + 24 * count


def test_the_compact_index_gives_back_every_reference(tmp_path: Path) -> None:
    """Odd stamps (none, fractions of a second, centuries apart) and several files."""
    index = recording_module._DocumentIndex()
    stamps = [
        T0,
        None,
        T0 + timedelta(microseconds=5),
        datetime(1, 1, 1),
        datetime(9999, 12, 31, 23, 59, 59),
        T0 - timedelta(days=3),
        T0 + timedelta(seconds=1),
    ]
    refs = [
        recording_module._DocumentRef(
            n // 3, 10 * n + 2**40 * (n % 2), 10 * n + 7 + 2**40 * (n % 2), stamp
        )
        for n, stamp in enumerate(stamps)
    ]
    for ref in refs:
        index.append(ref)
    assert len(index) == len(refs)
    assert [index[n] for n in range(len(refs))] == refs
    assert [index.timestamp(n) for n in range(len(refs))] == stamps
    # Out of order: the latest at or before the moment.
    assert index.index_at(T0) == 0
    assert index.index_at(T0 + timedelta(hours=1)) == 6
    assert index.index_at(datetime(2, 1, 1)) == 3
    index.move(1, 2**40 + 12, T0 + timedelta(seconds=2))
    assert index[1] == recording_module._DocumentRef(
        0, 2**40 + 12, 2**40 + 17, T0 + timedelta(seconds=2)
    )


def test_read_through_memory_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    count = _big_stream(path, 12)
    tracemalloc.start()
    try:
        with Recording.open(path) as recording:
            tracemalloc.reset_peak()
            seen = sum(1 for _ in recording)
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == count
    assert peak < 8 * 2**20, f"read-through peaked at {peak / 2**20:.1f} MiB"


# --- opening ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"  \n\t\n", "only white space"),
        (b"<html><body>Not found</body></html>", "HTML"),
        (b"\x00\x01\x02binary", "not XML"),
        (b"<?xml version='1.0'?><other/>", "not an nvidia-smi log"),
        (b"<?xml version='1.0'?>\n<nvidia_smi_log>\n<timestamp>", "truncated"),
    ],
)
def test_unreadable_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "capture.xml"
    path.write_bytes(content)
    with pytest.raises(BadCapture, match=message):
        Recording.open(path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(BadCapture, match="no such file"):
        Recording.open(tmp_path / "nope.xml")


def test_unreadable_permissions(tmp_path: Path) -> None:
    path = tmp_path / "secret.xml"
    path.write_bytes(stamped(T4[0], T0))
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            # root reads anything: the refusal cannot happen, but opening must still work.
            with Recording.open(path) as recording:
                assert len(recording) == 1
        else:
            with pytest.raises(BadCapture, match="permission denied"):
                Recording.open(path)
    finally:
        path.chmod(0o644)
