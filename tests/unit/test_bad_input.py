"""The real CLI on files that are not captures: one line on stderr, exit 2, no traceback."""

from __future__ import annotations

import errno
import gzip
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
T0 = datetime(2024, 9, 18, 21, 34, 12)
CAPTURES = ("tesla-t4-v11.xml", "grid-k520-v7.xml", "a100-sxm4-80gb-mig-v12.xml")


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gputop: ")
    for word in words:
        assert word in lines[0]
    assert result.stdout == ""


def _stream(count: int) -> bytes:
    documents = []
    for number in range(count):
        raw = (SNAPSHOTS / CAPTURES[number % len(CAPTURES)]).read_bytes()
        stamp = (T0 + timedelta(seconds=number)).strftime("%a %b %d %H:%M:%S %Y").encode()
        documents.append(
            re.sub(rb"<timestamp>[^<]*</timestamp>", b"<timestamp>" + stamp + b"</timestamp>", raw)
        )
    return b"\n".join(documents)


_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<nvidia_smi_log><timestamp>&lol9;</timestamp><driver_version>1</driver_version></nvidia_smi_log>
"""

_EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<nvidia_smi_log><timestamp>&x;</timestamp><driver_version>&x;</driver_version></nvidia_smi_log>
"""

_HTML = b"""<!DOCTYPE html>
<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>
"""

BAD_FILES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "empty.xml": (b"", ("empty",)),
    "blank.xml": (b"\n   \n\t\n", ("white space",)),
    "page.xml": (_HTML, ("HTML",)),
    # In no format gputop reads: the one line lists those it does.
    "binary.xml": (
        bytes(range(256)) * 64,
        ("not a recording gputop reads", "-q -x", "--query-gpu"),
    ),
    "other.xml": (b'<?xml version="1.0"?>\n<rss version="2.0"><channel/></rss>\n', ("nvidia-smi",)),
    "bomb.xml": (_BOMB, ("entit",)),
    "external.xml": (_EXTERNAL, ("entit",)),
    "truncated.xml": (
        (SNAPSHOTS / "tesla-t4-v11.xml").read_bytes()[:5000],
        ("truncated",),
    ),
    "notgzip.xml.gz": (b"this file only has a .gz name\n", ("not a recording gputop reads",)),
    "badgzip.xml.gz": (b"\x1f\x8b\x08\x00" + b"\xff" * 200, ("gzip",)),
}


@pytest.mark.parametrize("mode", ["--once", "--json"])
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file(tmp_path: Path, name: str, mode: str) -> None:
    content, words = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(content)
    result = gputop("--replay", path, mode)
    assert_one_line_error(result, str(path), *words)


def test_external_entity_is_never_read(tmp_path: Path) -> None:
    path = tmp_path / "external.xml"
    path.write_bytes(_EXTERNAL)
    result = gputop("--replay", path, "--json")
    assert "root:" not in result.stdout + result.stderr


def test_missing_file(tmp_path: Path) -> None:
    result = gputop("--replay", tmp_path / "nowhere.xml", "--once")
    assert_one_line_error(result, "no such file")


def test_directory_without_xml(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    result = gputop("--replay", tmp_path, "--once")
    assert_one_line_error(result, "no .xml")


def test_directory_of_bad_files(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_bytes(_HTML)
    result = gputop("--replay", tmp_path, "--once")
    assert_one_line_error(result, "HTML")


def test_only_malformed_documents(tmp_path: Path) -> None:
    raw = (SNAPSHOTS / "tesla-t4-v11.xml").read_bytes().replace(b"</uuid>", b"</uuidx>")
    path = tmp_path / "broken.xml"
    path.write_bytes(raw + b"\n" + raw)
    result = gputop("--replay", path, "--once")
    assert_one_line_error(result, "malformed")


@pytest.fixture
def four(tmp_path: Path) -> Path:
    path = tmp_path / "stream.xml"
    path.write_bytes(_stream(4))
    return path


@pytest.mark.parametrize(
    ("at", "words"),
    [
        ("4", ("--at 4", "4 snapshot", "0 to 3")),
        ("-5", ("--at -5",)),
        ("99999999999", ("--at",)),
        ("yesterday", ("yesterday", "not an index or a time", "21:34:12")),
        ("25:00:00", ("25:00:00",)),
        ("2024-09-18T21:34:11", ("before the recording starts", "2024-09-18 21:34:12")),
        ("21:00:00", ("before the recording starts",)),
        ("21:34:16", ("after the recording ends", "to 21:34:15 (4 snapshots)")),
        ("2024-09-18T21:34:13+02:00", ("zone",)),
        ("", ("--at",)),
    ],
)
def test_bad_at(four: Path, at: str, words: tuple[str, ...]) -> None:
    result = gputop("--replay", four, "--once", "--at", at)
    assert_one_line_error(result, *words)


def test_at_without_timestamps(tmp_path: Path) -> None:
    raw = re.sub(
        rb"<timestamp>[^<]*</timestamp>", b"", (SNAPSHOTS / "grid-k520-v7.xml").read_bytes()
    )
    path = tmp_path / "nostamp.xml"
    path.write_bytes(raw + b"\n" + raw)
    result = gputop("--replay", path, "--once", "--at", "21:34:12")
    assert_one_line_error(result, "no timestamps")
    iso = gputop("--replay", path, "--once", "--at", "2024-09-18T21:34:12")
    assert_one_line_error(iso, "use an index")
    good = gputop("--replay", path, "--json", "--at", "1")
    assert good.returncode == 0
    assert json.loads(good.stdout)["timestamp"] is None


def test_at_without_replay() -> None:
    result = gputop("--once", "--at", "1")
    assert_one_line_error(result, "--replay")


def test_truncated_stream_prints_and_warns(tmp_path: Path) -> None:
    data = _stream(4)
    path = tmp_path / "killed.xml"
    path.write_bytes(data[: data.rindex(b"<fb_memory_usage>")])
    once = gputop("--replay", path, "--once")
    assert once.returncode == 0, once.stderr
    assert "Tesla T4" in once.stdout
    assert "Traceback" not in once.stderr
    warnings = once.stderr.splitlines()
    # The stream is of three machines (a T4, a K520, an A100 box): said too.
    assert len(warnings) == 2
    assert all(warning.startswith("gputop: warning: ") for warning in warnings)
    assert "holds captures of 3 different machines" in warnings[0]
    assert "incomplete last document" in warnings[1]

    every = gputop("--replay", path, "--json", "--count", "10")
    assert every.returncode == 0, every.stderr
    lines = every.stdout.splitlines()
    assert [json.loads(line)["gpus"][0]["name"] for line in lines] == [
        "Tesla T4",
        "GRID K520",
        "NVIDIA A100-SXM4-80GB",
    ]
    assert sorted(every.stderr.splitlines()) == sorted(
        [*warnings, "gputop: --count 10: the recording holds only 3 documents"]
    )


def test_malformed_document_inside_a_count(tmp_path: Path) -> None:
    documents = _stream(3).split(b"\n<?xml")
    documents[1] = documents[1].replace(b"</uuid>", b"</uuidx>")
    path = tmp_path / "damaged.xml"
    path.write_bytes(b"\n<?xml".join(documents))
    result = gputop("--replay", path, "--json", "--count", "3")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2
    assert "skipped document 1" in result.stderr
    alone = gputop("--replay", path, "--json", "--at", "1")
    assert_one_line_error(alone, "document 1", "malformed")


def test_gzip_stream_is_read(tmp_path: Path) -> None:
    path = tmp_path / "log.xml.gz"
    path.write_bytes(gzip.compress(_stream(3)))
    result = gputop("--replay", path, "--once", "--at", "-1")
    assert result.returncode == 0, result.stderr
    assert "A100-SXM4-80GB" in result.stdout
    assert result.stderr.splitlines() == [
        line
        for line in result.stderr.splitlines()
        if "holds captures of 3 different machines" in line
    ]
    assert result.stderr.count("\n") == 1


def test_a_loop_of_symbolic_links_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.xml").symlink_to(tmp_path / "b.xml")
    (tmp_path / "b.xml").symlink_to(tmp_path / "a.xml")
    for args in (("--replay", tmp_path / "a.xml", "--once"), ("report", tmp_path / "a.xml")):
        result = gputop(*args)
        assert_one_line_error(result, "a.xml", "too many levels of symbolic links")
        assert "no such file" not in result.stderr


def _write_when_read(fifo: Path, data: bytes, after: float) -> threading.Thread:
    """Write ``data`` to the FIFO ``after`` seconds, once a reader has it open; gives up
    after 20 s so that a reader that never opens cannot hang the suite."""

    def write() -> None:
        time.sleep(after)
        give_up = time.monotonic() + 20
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:  # ENXIO: no reader yet
                if error.errno != errno.ENXIO or time.monotonic() > give_up:
                    return
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            return

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("command", [["--replay", "{}", "--once"], ["report", "{}", "--no-charts"]])
def test_a_fifo_with_no_writer_says_what_it_waits_for(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "feed"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        [sys.executable, "-m", "gputop", *(arg.format(fifo) for arg in command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], 20)
        assert ready, "no line on stderr while waiting for the pipe"
        line = process.stderr.readline()
        assert (
            line
            == f"gputop: waiting for data on a pipe: {fifo} (nothing has been written to it yet)\n"
        )
        assert process.poll() is None  # still waiting, not failed
        _write_when_read(fifo, (SNAPSHOTS / "tesla-t4-v11.xml").read_bytes(), 0.0)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, err
    assert "Tesla T4" in out and err == ""


def test_a_fifo_written_at_once_says_nothing(tmp_path: Path) -> None:
    fifo = tmp_path / "feed"
    os.mkfifo(fifo)
    writer = _write_when_read(fifo, (SNAPSHOTS / "tesla-t4-v11.xml").read_bytes(), 0.0)
    result = gputop("--replay", fifo, "--json")
    writer.join(5)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout)["gpus"][0]["name"] == "Tesla T4"
