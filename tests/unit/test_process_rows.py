"""Row building, filtering, sorting and details of the process table, without Textual."""

from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.ui.render.process_rows import (
    COLUMN_INDEX,
    COLUMNS,
    COMMAND_WIDTH,
    FIELD_LABELS,
    FOREIGN_USER,
    Kill,
    ProcessRow,
    TypeFilter,
    build_row,
    build_rows,
    describe,
    detail_fields,
    fit_command,
    format_elapsed,
    gpu_label,
    matches,
    send_signal,
    signal_refusal,
    sort_rows,
    target_pid,
    visible_rows,
)

NOW = 1_700_000_000.0
MIB = 1024**2
GIB = 1024**3


def proc(pid: int, **fields: object) -> ProcessSample:
    return ProcessSample(pid=pid, **fields)  # type: ignore[arg-type]


def snapshot(*gpus: tuple[ProcessSample, ...]) -> Snapshot:
    return Snapshot(
        timestamp=None,
        gpus=tuple(GpuSample(index=i, processes=procs) for i, procs in enumerate(gpus)),
    )


def row(process: ProcessSample, gpu: int = 0) -> ProcessRow:
    return build_row(gpu, process, NOW)


def keys(rows: Sequence[ProcessRow]) -> list[tuple[int, int]]:
    return [r.key for r in rows]


class TestCells:
    def test_gpu_label_plain_and_mig(self) -> None:
        assert gpu_label(2, proc(1)) == "2"
        assert gpu_label(0, proc(1, gpu_instance_id=3, compute_instance_id=0)) == "0:3/0"
        assert gpu_label(1, proc(1, gpu_instance_id=13)) == "1:13"

    @pytest.mark.parametrize(
        ("seconds", "text"),
        [
            (None, "n/a"),
            (0, "0:00"),
            (59.9, "0:59"),
            (65, "1:05"),
            (3723, "1:02:03"),
            (86399, "23:59:59"),
            (3 * 86400 + 4 * 3600 + 5, "3d04h"),
            (-30, "0:00"),
        ],
    )
    def test_format_elapsed(self, seconds: float | None, text: str) -> None:
        assert format_elapsed(seconds) == text

    def test_full_row(self) -> None:
        r = row(
            proc(
                2314,
                type="C",
                name="python",
                memory_used=int(18.2 * GIB),
                sm_utilization=87.4,
                user="alice",
                command="python train.py",
                cpu_percent=101.3,
                host_memory=95 * MIB,
                start_time=NOW - 125,
            )
        )
        assert r.cells == (
            "0",
            "2314",
            "alice",
            "n/a",  # POD, CONTAINER, JOB: no owner
            "n/a",
            "n/a",
            "C",
            "18.2GiB",
            "87%",
            "101%",
            "95MiB",
            "2:05",
            "python train.py",
        )
        assert r.key == (0, 2314)
        assert r.key_text == "0:2314"

    def test_missing_values_are_na_never_zero(self) -> None:
        r = row(proc(7))
        for column in COLUMNS:
            if column.key not in ("gpu", "pid"):
                assert r.cell(column.key) == "n/a", column.key
        assert all(r.sort_values[COLUMN_INDEX[k]] is None for k in ("gpu_memory", "sm", "time"))

    def test_zero_is_zero(self) -> None:
        r = row(proc(7, sm_utilization=0.0, memory_used=0))
        assert r.cell("sm") == "0%"
        assert r.cell("gpu_memory") == "0MiB"

    def test_foreign_user_is_labelled(self) -> None:
        r = row(proc(51234, name="python3", foreign=True))
        assert r.foreign
        assert r.cell("user") == FOREIGN_USER
        assert r.cell("command") == "python3"

    def test_command_falls_back_to_name_and_is_cut(self) -> None:
        assert row(proc(1, name="/usr/bin/Xorg")).cell("command") == "/usr/bin/Xorg"
        assert row(proc(1, name="x", command="python a.py")).cell("command") == "python a.py"
        long = "python " + "--flag " * 100
        cell = row(proc(1, command=long)).cell("command")
        assert len(cell) == COMMAND_WIDTH
        assert cell.endswith("…")
        assert long.startswith(cell[:-1])


class TestBuildRows:
    def test_none_snapshot(self) -> None:
        assert build_rows(None, NOW) == []

    def test_rows_keep_snapshot_order_across_gpus(self) -> None:
        snap = snapshot((proc(10), proc(11)), (proc(10), proc(12)))
        assert keys(build_rows(snap, NOW)) == [(0, 10), (0, 11), (1, 10), (1, 12)]

    def test_duplicate_pid_on_one_gpu_keeps_first(self) -> None:
        snap = snapshot((proc(10, type="C"), proc(10, type="G")))
        rows = build_rows(snap, NOW)
        assert keys(rows) == [(0, 10)]
        assert rows[0].cell("type") == "C"

    def test_time_is_relative_to_now(self) -> None:
        snap = snapshot((proc(1, start_time=1000.0),))
        assert build_rows(snap, 1000.0 + 3600)[0].cell("time") == "1:00:00"
        assert build_rows(snap, 1000.0 + 7200)[0].cell("time") == "2:00:00"

    def test_unchanged_processes_are_not_formatted_again(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import gputop.ui.render.process_rows as process_rows

        built: list[int] = []
        original = process_rows.build_row

        def counting(gpu_index: int, process: ProcessSample, now: float) -> ProcessRow:
            built.append(process.pid)
            return original(gpu_index, process, now)

        monkeypatch.setattr(process_rows, "build_row", counting)
        cache: process_rows.RowCache = {}
        idle = [proc(pid, start_time=1000.0, memory_used=MIB) for pid in range(1, 101)]
        build_rows(snapshot(tuple(idle)), 1000.0 + 59, cache)
        assert len(built) == 100
        built.clear()
        busy = dataclasses.replace(idle[7], memory_used=2 * MIB)
        later = snapshot((*idle[:7], busy, *idle[8:]))
        rows = build_rows(later, 1000.0 + 61, cache)
        # Only the process whose sample changed is formatted; every row has the new time.
        assert built == [busy.pid]
        assert {row.cell("time") for row in rows} == {"1:01"}
        assert {row.sort_values[COLUMN_INDEX["time"]] for row in rows} == {(61.0,)}
        assert rows == build_rows(later, 1000.0 + 61)


class TestFilter:
    rows = (
        row(proc(100, user="alice", command="python train.py", type="C")),
        row(proc(200, user="bob", name="/usr/lib/xorg/Xorg", type="G")),
        row(proc(300, user="carol", command="blender -b scene", type="C+G"), gpu=1),
        row(proc(400, name="python3", foreign=True, type="M+C")),
        row(proc(500, gpu_instance_id=3, compute_instance_id=0, command="mig job"), gpu=1),
        row(proc(600, type=None, user="dave", local_pid=77)),
    )

    @pytest.mark.parametrize(
        ("text", "pids"),
        [
            ("", [100, 200, 300, 400, 500, 600]),
            ("alice", [100]),
            ("ALICE", [100]),
            ("python", [100, 400]),
            ("xorg", [200]),
            ("300", [300]),
            ("1:3/0", [500]),
            ("other ns", [400]),
            ("python train", [100]),
            ("python bob", []),
            ("77", [600]),
            ("nobody", []),
        ],
    )
    def test_matches(self, text: str, pids: list[int]) -> None:
        assert [r.process.pid for r in self.rows if matches(r, text)] == pids

    def test_type_filter_cycles(self) -> None:
        assert TypeFilter.ALL.next() is TypeFilter.COMPUTE
        assert TypeFilter.COMPUTE.next() is TypeFilter.GRAPHICS
        assert TypeFilter.GRAPHICS.next() is TypeFilter.ALL

    @pytest.mark.parametrize(
        ("kind", "compute", "graphics"),
        [("C", True, False), ("G", False, True), ("C+G", True, True), ("M+C", True, False),
         ("M", True, False), (None, False, False)],
    )  # fmt: skip
    def test_type_filter_admits(self, kind: str | None, compute: bool, graphics: bool) -> None:
        assert TypeFilter.ALL.admits(kind)
        assert TypeFilter.COMPUTE.admits(kind) is compute
        assert TypeFilter.GRAPHICS.admits(kind) is graphics

    def test_visible_rows_combines_both(self) -> None:
        shown = visible_rows(self.rows, "python", TypeFilter.COMPUTE)
        assert [r.process.pid for r in shown] == [100, 400]
        shown = visible_rows(self.rows, "", TypeFilter.GRAPHICS)
        assert [r.process.pid for r in shown] == [200, 300]


class TestSort:
    rows = (
        row(proc(30, memory_used=5 * MIB, user="bob", start_time=NOW - 10)),
        row(proc(10, memory_used=None, user="Alice", start_time=None)),
        row(proc(20, memory_used=9 * MIB, user=None, start_time=NOW - 500)),
        row(proc(5, memory_used=5 * MIB, user="carol", start_time=NOW - 10), gpu=1),
        row(proc(7, gpu_instance_id=4, compute_instance_id=0), gpu=0),
        row(proc(8, gpu_instance_id=3, compute_instance_id=1), gpu=0),
    )

    def test_numbers_descending_unknown_last(self) -> None:
        ordered = sort_rows(self.rows, COLUMN_INDEX["gpu_memory"], reverse=True)
        assert keys(ordered) == [(0, 20), (0, 30), (1, 5), (0, 7), (0, 8), (0, 10)]

    def test_numbers_ascending_unknown_still_last(self) -> None:
        ordered = sort_rows(self.rows, COLUMN_INDEX["gpu_memory"], reverse=False)
        assert keys(ordered) == [(0, 30), (1, 5), (0, 20), (0, 7), (0, 8), (0, 10)]

    def test_text_ignores_case(self) -> None:
        ordered = sort_rows(self.rows, COLUMN_INDEX["user"], reverse=False)
        assert keys(ordered)[:3] == [(0, 10), (0, 30), (1, 5)]

    def test_gpu_orders_by_index_then_instance(self) -> None:
        ordered = sort_rows(self.rows, COLUMN_INDEX["gpu"], reverse=False)
        assert keys(ordered) == [(0, 10), (0, 20), (0, 30), (0, 8), (0, 7), (1, 5)]

    def test_time_longest_first(self) -> None:
        ordered = sort_rows(self.rows, COLUMN_INDEX["time"], reverse=True)
        assert keys(ordered)[:3] == [(0, 20), (0, 30), (1, 5)]

    def test_pid(self) -> None:
        ordered = sort_rows(self.rows, COLUMN_INDEX["pid"], reverse=True)
        assert [r.process.pid for r in ordered] == [30, 20, 10, 8, 7, 5]

    @given(
        st.lists(
            st.tuples(
                st.integers(0, 3),
                st.integers(1, 10_000),
                st.one_of(st.none(), st.integers(0, 80 * GIB)),
            ),
            max_size=30,
            unique_by=lambda t: (t[0], t[1]),
        ),
        st.booleans(),
    )
    def test_sort_is_a_permutation_ordered_with_unknown_last(
        self, specs: list[tuple[int, int, int | None]], reverse: bool
    ) -> None:
        rows = [row(proc(pid, memory_used=memory), gpu=gpu) for gpu, pid, memory in specs]
        ordered = sort_rows(rows, COLUMN_INDEX["gpu_memory"], reverse)
        assert sorted(keys(ordered)) == sorted(keys(rows))
        values = [r.process.memory_used for r in ordered]
        known = [v for v in values if v is not None]
        assert values[: len(known)] == known
        assert known == sorted(known, reverse=reverse)


class TestDetails:
    def test_every_process_field_has_a_label(self) -> None:
        names = {f.name for f in dataclasses.fields(ProcessSample)}
        assert set(FIELD_LABELS) == names

    def test_fields(self) -> None:
        start = NOW - 3700
        r = row(
            proc(
                4242,
                type="C",
                name="python3",
                command="python3 -m serve",
                user="erin",
                memory_used=2 * GIB,
                gpu_instance_id=3,
                compute_instance_id=0,
                cpu_percent=12.0,
                host_memory=512 * MIB,
                start_time=start,
                local_pid=17,
            ),
            gpu=1,
        )
        fields = dict(detail_fields(r, NOW))
        assert fields["GPU"] == "1:3/0"
        assert fields["PID (driver)"] == "4242"
        assert fields["PID here"] == "17"
        assert fields["PID namespace"] == "this one"
        assert fields["Command"] == "python3 -m serve"
        assert fields["Process name"] == "python3"
        assert fields["GPU memory"] == "2048MiB"
        assert fields["SM utilization"] == "n/a"
        assert fields["Started"] == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start))
        assert fields["Running for"] == "1:01:40"
        assert len(fields) == len(FIELD_LABELS) + 2

    def test_foreign_fields(self) -> None:
        fields = dict(detail_fields(row(proc(9, foreign=True)), NOW))
        assert fields["PID here"] == "not in this PID namespace"
        assert fields["PID namespace"].startswith("another")
        assert fields["User"] == FOREIGN_USER
        assert fields["Started"] == "n/a"


class TestSignals:
    def test_target_is_the_local_pid(self) -> None:
        assert target_pid(proc(4242)) == 4242
        assert target_pid(proc(4242, local_pid=17)) == 17

    def test_refusals(self) -> None:
        assert signal_refusal(proc(4242)) is None
        assert signal_refusal(proc(4242, foreign=True)) == "not in this PID namespace"
        assert signal_refusal(proc(0)) is not None
        assert signal_refusal(proc(4242, local_pid=-1)) is not None

    def test_send_signal_reports_in_words(self) -> None:
        sent: list[tuple[int, int]] = []

        def kill(pid: int, sig: int) -> None:
            sent.append((pid, sig))

        def failing(error: OSError) -> Kill:
            def kill(pid: int, sig: int) -> None:
                raise error

            return kill

        assert send_signal(kill, proc(4242, local_pid=17), signal.SIGTERM) is None
        assert sent == [(17, signal.SIGTERM)]
        assert send_signal(kill, proc(9, foreign=True), signal.SIGTERM) == (
            "not in this PID namespace"
        )
        assert send_signal(kill, proc(0), signal.SIGKILL) == "PID 0 does not name a single process"
        assert sent == [(17, signal.SIGTERM)]
        denied = failing(PermissionError(1, "Operation not permitted"))
        assert send_signal(denied, proc(5, user="root"), signal.SIGTERM) == (
            "not permitted to signal PID 5 (it belongs to root)"
        )
        assert send_signal(denied, proc(5), signal.SIGTERM) == "not permitted to signal PID 5"
        gone = failing(ProcessLookupError(3, "No such process"))
        assert send_signal(gone, proc(5), signal.SIGINT) == "process has exited"
        other = failing(OSError(22, "Invalid argument"))
        assert send_signal(other, proc(5), signal.SIGINT) == "Invalid argument"

    def test_describe(self) -> None:
        text = describe(row(proc(1, user="alice", command="python a.py"), gpu=2))
        assert text == "alice  python a.py  (GPU 2)"


class TestFitCommand:
    WINDOWS = r"C:\Users\alice\AppData\Local\Programs\Python\Python311\python.exe train.py"

    def test_a_command_that_fits_is_whole(self) -> None:
        assert fit_command("python train.py", 15) == "python train.py"

    @pytest.mark.parametrize("width", range(0, 90))
    def test_never_longer_than_the_room_and_every_cut_is_marked(self, width: int) -> None:
        for command in (self.WINDOWS, "/opt/conda/bin/python -m torch.run x.py", "python a b"):
            cut = fit_command(command, width)
            assert len(cut) <= width
            if len(command) <= width:
                assert cut == command
            elif width:
                assert "…" in cut and len(cut) >= width - 12

    def test_a_windows_program_loses_its_directories_from_the_left_first(self) -> None:
        assert fit_command(self.WINDOWS, 40) == r"…\Python\Python311\python.exe train.py"
        assert fit_command(self.WINDOWS, 24) == r"…\python.exe train.py"
        # Then the arguments, from the right; the program name stays to the last.
        assert fit_command(self.WINDOWS, 16) == r"…\python.exe tr…"
        assert fit_command(self.WINDOWS, 12) == r"…\python.exe"
        assert fit_command(self.WINDOWS, 8) == "…hon.exe"

    def test_a_windows_program_path_may_hold_spaces(self) -> None:
        command = r"C:\Program Files\NVIDIA Corporation\NvContainer\nvcontainer.exe -s Telemetry"
        assert fit_command(command, 45) == r"…\NvContainer\nvcontainer.exe -s Telemetry"

    def test_a_posix_program_loses_its_directories_too(self) -> None:
        command = "/opt/conda/envs/torch/bin/python train.py --epochs 90"
        assert fit_command(command, 40) == "…/torch/bin/python train.py --epochs 90"
        assert fit_command("python train.py --config big.yaml", 20) == "python train.py --c…"
