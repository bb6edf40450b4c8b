"""What the recording readers share to take a pipe or a .gz (``sources.spool``) and to say
that a followed recording's first snapshot is awaited (``sources.following.FirstWait``)."""

from __future__ import annotations

import gzip
import zlib

import pytest

from gputop.sources.recordings.following import FirstWait
from gputop.sources.recordings.spool import GzipMembers, Spool, write_all


def test_members_are_inflated_one_after_another_across_chunk_ends() -> None:
    data = gzip.compress(b"first member\n") + gzip.compress(b"second member\n")
    for cut in (1, 7, len(data) // 2, len(data) - 3):
        members = GzipMembers()
        out = members.inflate(data[:cut]) + members.inflate(data[cut:])
        assert out == b"first member\nsecond member\n"
        assert members.damaged is None and not members.midway


def test_a_cut_off_member_is_midway_and_damage_keeps_what_came_before() -> None:
    whole = gzip.compress(b"a" * 1000)
    members = GzipMembers()
    members.inflate(whole[: len(whole) // 2])
    assert members.midway and members.damaged is None
    members = GzipMembers()
    out = members.inflate(gzip.compress(b"kept\n") + b"\x1f\x8bnot a gzip at all")
    assert out == b"kept\n"
    assert isinstance(members.damaged, zlib.error)


def test_a_spool_reads_back_what_was_appended_by_offset() -> None:
    spool = Spool()
    try:
        spool.append(b"hello ")
        spool.append(b"world")
        assert spool.size == 11
        assert spool.read(6, 5) == b"world"
        buffer = bytearray(4)
        with memoryview(buffer) as view:
            assert spool.read_into(2, view) == 4
        assert bytes(buffer) == b"llo "
    finally:
        spool.close()


def test_write_all_writes_every_byte_of_a_large_chunk(tmp_path: object) -> None:
    import os

    read_end, write_end = os.pipe()
    try:
        data = bytes(range(256)) * 16  # within a pipe's buffer: no reader needed
        write_all(write_end, data)
        assert os.read(read_end, len(data) + 1) == data
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_first_wait_is_told_once_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("gputop.sources.recordings.following.time.monotonic", lambda: now[0])
    said: list[float] = []
    wait = FirstWait(lambda: said.append(now[0]))
    wait.tick()
    now[0] = 100.9
    wait.tick()
    assert said == []
    now[0] = 101.0
    wait.tick()
    now[0] = 105.0
    wait.tick()
    assert said == [101.0]
    FirstWait(None).tick()  # nobody to tell: nothing happens
