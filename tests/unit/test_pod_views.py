"""Pods, containers and Slurm jobs as the views show them, without Textual: the process
table's owner cells, filter, sort and pod lines, the GPU panel's holder and the MIG tree's
pods per instance."""

from __future__ import annotations

import dataclasses

import pytest

from gputop.model import (
    ContainerView,
    GpuSample,
    MigDeviceSample,
    Owner,
    ProcessSample,
    Snapshot,
)
from gputop.ui.render.owners import (
    POD_WIDTH,
    Holder,
    container_cell,
    container_line,
    cut_middle,
    device_holders,
    gpu_holder,
    holder_of,
    job_cell,
    pod_cell,
)
from gputop.ui.render.panel_lines import PanelState, detail_line, mig_lines
from gputop.ui.render.process_rows import (
    COLUMN_INDEX,
    COLUMNS,
    GroupCache,
    GroupRow,
    ProcessRow,
    RowCache,
    TableRow,
    TypeFilter,
    build_row,
    build_rows,
    cursor_after,
    gpu_list,
    group_rows,
    matches,
    owner_columns,
    sort_rows,
    visible_rows,
)
from gputop.ui.widgets.mig_tree import MigNode, NodeKey, mig_outline
from support.pods import (
    BERT,
    BERT_PROFILER,
    LLAMA,
    NOW,
    SLURM,
    inside_pod,
    k8s_node,
    mig_node,
    slurm_node,
)


def plain(line: tuple[tuple[str, str], ...]) -> str:
    return "".join(text for text, _ in line)


def rows_of(snapshot: Snapshot) -> list[ProcessRow]:
    return build_rows(snapshot, NOW)


def keys(lines: list[TableRow]) -> list[str]:
    return [line.key_text for line in lines]


def find(nodes: list[MigNode] | tuple[MigNode, ...], key: NodeKey) -> MigNode:
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.key == key:
            return node
        stack.extend(node.children)
    raise AssertionError(f"no node {key}")


class TestCells:
    def test_a_pods_process_shows_pod_container_and_no_job(self) -> None:
        row = next(r for r in rows_of(k8s_node()) if r.process.pid == 52010)
        assert row.cell("pod") == "bert-finetune-0"
        assert row.cell("container") == "trainer"
        assert row.cell("job") == "n/a"

    def test_a_long_pod_name_keeps_its_start_and_its_replica_suffix(self) -> None:
        assert pod_cell(LLAMA) == "llama-70b-…8b5-x2kq9"
        assert len(pod_cell(LLAMA)) == POD_WIDTH
        assert cut_middle("abcdef", 6) == "abcdef"
        assert cut_middle("abcdefg", 5) == "ab…fg"
        assert cut_middle("abcdefg", 1) == "…"

    def test_unknown_names_fall_back_to_ids_and_nothing_is_na(self) -> None:
        by_ids = Owner(container_id="f" * 64, pod_uid="0b0e2c44-1111-2222-3333-444455556666")
        assert pod_cell(by_ids) == "uid 0b0e2c44"
        assert container_cell(by_ids) == "f" * 12
        for cell in (pod_cell, container_cell, job_cell):
            assert cell(None) == "n/a"
            assert cell(Owner()) == "n/a"
        assert job_cell(SLURM) == "4242017"

    def test_owner_columns_are_those_some_process_has(self) -> None:
        assert owner_columns(rows_of(k8s_node())) == {"pod", "container"}
        assert owner_columns(rows_of(slurm_node())) == {"job"}
        bare = dataclasses.replace(k8s_node(), gpus=(GpuSample(index=0, processes=(
            ProcessSample(1, owner=None), ProcessSample(2, owner=Owner()),
        )),))  # fmt: skip
        assert owner_columns(rows_of(bare)) == frozenset()

    def test_sorting_by_pod_puts_processes_of_no_pod_last_either_way(self) -> None:
        rows = rows_of(k8s_node())
        pod = COLUMN_INDEX["pod"]
        up = [r.process.pid for r in sort_rows(rows, pod, reverse=False)]
        assert up == [52010, 52044, 41001, 41002, 1893]
        down = [r.process.pid for r in sort_rows(rows, pod, reverse=True)]
        assert down == [41001, 41002, 52010, 52044, 1893]


class TestFilter:
    @pytest.mark.parametrize(
        ("text", "pids"),
        [
            ("research", [52010, 52044]),  # namespace
            ("llama-70b", [41001, 41002]),  # pod
            ("profiler", [52044]),  # container
            ("a3f9c1", [41001, 41002]),  # container id
            ("5d1c2b1e", [41001, 41002]),  # pod UID
            ("ml vllm", [41001, 41002]),  # every word, any field
            ("research xorg", []),
        ],
    )
    def test_filter_matches_pod_namespace_container_and_ids(
        self, text: str, pids: list[int]
    ) -> None:
        rows = rows_of(k8s_node())
        assert sorted(r.process.pid for r in rows if matches(r, text)) == pids

    def test_filter_matches_a_slurm_job(self) -> None:
        shown = visible_rows(rows_of(slurm_node()), "4242017", TypeFilter.ALL)
        assert [r.process.pid for r in shown] == [7001, 7002]


class TestGroups:
    def test_holders_pod_then_job_then_container(self) -> None:
        assert holder_of(LLAMA) == Holder(
            "pod",
            "ml/llama-70b-inference-6f7d9c8b5-x2kq9",
            "ml/llama-70b-inference-6f7d9c8b5-x2kq9",
        )
        assert holder_of(BERT) == holder_of(BERT_PROFILER)  # two containers, one pod
        assert holder_of(SLURM) == Holder("job", "4242017", "4242017")
        docker = Owner(runtime="docker", container_id="c" * 64, container="jupyter")
        assert holder_of(docker) == Holder("container", "c" * 64, "jupyter")
        assert holder_of(Owner(pod_uid="u-1")) == Holder("pod", "u-1", "uid u-1")
        assert holder_of(None) is None
        assert holder_of(Owner(runtime="containerd")) is None

    def test_one_line_per_pod_with_sums_and_the_busiest_process(self) -> None:
        lines = group_rows(rows_of(k8s_node()), COLUMN_INDEX["gpu_memory"], True, ())
        assert keys(lines) == [
            "pod:ml/llama-70b-inference-6f7d9c8b5-x2kq9",
            "pod:research/bert-finetune-0",
            "0:1893",
        ]
        llama, bert, xorg = lines
        assert isinstance(llama, GroupRow) and isinstance(bert, GroupRow)
        assert isinstance(xorg, ProcessRow)
        assert llama.cell("gpu") == "▸ 0,1"
        assert llama.cell("pid") == ""
        assert llama.cell("user") == "root"
        assert llama.cell("pod") == "llama-70b-…8b5-x2kq9"
        assert llama.cell("gpu_memory") == "59.0GiB"  # 30 + 29
        assert llama.cell("sm") == "71%"  # the busier rank's
        first = next(r for r in llama.members if r.process.pid == 41001)
        assert llama.cell("time") == first.cell("time") != "n/a"  # the longer running
        assert llama.cell("command") == ("2 processes in ml/llama-70b-inference-6f7d9c8b5-x2kq9")
        assert bert.cell("container") == "2 containers"
        assert bert.cell("gpu_memory") == "12.3GiB"
        assert bert.cell("cpu") == "55%"  # 52.0 + 2.6
        assert [m.process.pid for m in bert.members] == [52010, 52044]

    def test_groups_sort_among_loose_processes_by_their_own_values(self) -> None:
        rows = rows_of(k8s_node())
        by_time = group_rows(rows, COLUMN_INDEX["time"], True, ())
        assert keys(by_time)[0] == "0:1893"  # Xorg has run a day
        by_pid = group_rows(rows, COLUMN_INDEX["pid"], False, ())
        assert keys(by_pid) == [
            "0:1893",
            "pod:ml/llama-70b-inference-6f7d9c8b5-x2kq9",  # its lowest PID is 41001
            "pod:research/bert-finetune-0",
        ]

    def test_an_expanded_group_is_followed_by_its_processes_sorted_too(self) -> None:
        rows = rows_of(k8s_node())
        bert = "pod:research/bert-finetune-0"
        lines = group_rows(rows, COLUMN_INDEX["gpu_memory"], False, {bert})
        assert keys(lines) == [
            "0:1893",
            bert,
            "1:52044",
            "1:52010",
            "pod:ml/llama-70b-inference-6f7d9c8b5-x2kq9",
        ]
        group = lines[1]
        assert isinstance(group, GroupRow) and group.expanded
        assert group.cell("gpu") == "▾ 1"

    def test_a_group_sums_only_what_the_filters_let_through(self) -> None:
        shown = visible_rows(rows_of(k8s_node()), "nsys", TypeFilter.ALL)
        (line,) = group_rows(shown, COLUMN_INDEX["gpu_memory"], True, ())
        assert isinstance(line, GroupRow)
        assert line.cell("gpu_memory") == "300MiB"
        assert line.cell("command").startswith("1 process in research/")

    def test_a_group_of_unknown_values_reads_na_never_zero(self) -> None:
        owner = Owner(pod="p", namespace="n")
        snap = Snapshot(
            timestamp=None,
            gpus=(GpuSample(index=0, processes=(ProcessSample(5, owner=owner),)),),
        )
        (line,) = group_rows(rows_of(snap), COLUMN_INDEX["gpu_memory"], True, ())
        assert isinstance(line, GroupRow)
        for column in ("gpu_memory", "sm", "cpu", "host_memory", "time", "user", "type"):
            assert line.cell(column) == "n/a", column
        assert all(line.sort_values[COLUMN_INDEX[c]] is None for c in ("gpu_memory", "sm", "time"))

    def test_a_groups_line_is_reused_while_its_processes_only_run_on(self) -> None:
        column = COLUMN_INDEX["gpu_memory"]
        row_cache: RowCache = {}
        groups: GroupCache = {}
        node = k8s_node()
        first = group_rows(build_rows(node, NOW, row_cache), column, True, (), groups)
        later = group_rows(build_rows(node, NOW + 61, row_cache), column, True, (), groups)
        before, after = first[1], later[1]
        assert isinstance(before, GroupRow) and isinstance(after, GroupRow)
        trainer = node.gpus[1].processes[1]
        assert before.cell("time") == build_row(1, trainer, NOW).cell("time")
        assert after.cell("time") == build_row(1, trainer, NOW + 61).cell("time")
        assert after.cell("time") != before.cell("time")
        assert after.cells[COLUMN_INDEX["command"]] is before.cells[COLUMN_INDEX["command"]]
        # A process that changed is summed again.
        gpu1 = node.gpus[1]
        heavier = tuple(
            dataclasses.replace(p, memory_used=(p.memory_used or 0) * 2) for p in gpu1.processes
        )
        changed = dataclasses.replace(
            node, gpus=(node.gpus[0], dataclasses.replace(gpu1, processes=heavier))
        )
        again = group_rows(build_rows(changed, NOW + 62, row_cache), column, True, (), groups)
        bert = next(line for line in again if line.key_text == "pod:research/bert-finetune-0")
        assert isinstance(bert, GroupRow)
        assert bert.cell("gpu_memory") == "24.6GiB"
        assert bert.cell("time") == build_row(1, trainer, NOW + 62).cell("time")

    def test_gpu_lists_shorten_runs(self) -> None:
        assert gpu_list([1]) == "1"
        assert gpu_list([1, 0, 1]) == "0,1"
        assert gpu_list([0, 1, 2, 3, 6]) == "0-3,6"
        assert gpu_list([0, 2, 3]) == "0,2,3"

    def test_the_cursor_goes_to_the_group_and_back_to_its_first_process(self) -> None:
        rows = rows_of(k8s_node())
        column = COLUMN_INDEX["gpu_memory"]
        flat: dict[str, TableRow] = {r.key_text: r for r in sort_rows(rows, column, True)}
        grouped: dict[str, TableRow] = {r.key_text: r for r in group_rows(rows, column, True, ())}
        assert cursor_after("1:52044", flat, grouped) == "pod:research/bert-finetune-0"
        assert cursor_after("0:1893", flat, grouped) == "0:1893"
        # Back to one line per process: the group's first process in display order.
        assert cursor_after("pod:research/bert-finetune-0", grouped, flat) == "1:52010"
        assert cursor_after(None, flat, grouped) is None


class TestGpuPanel:
    def test_the_kubelets_holder_is_named_even_beside_a_process_of_no_pod(self) -> None:
        gpu = dataclasses.replace(k8s_node().gpus[0], holders=(LLAMA,))
        line = plain(detail_line(PanelState(gpu, {}), 120))
        assert line.startswith("pod ml/llama-70b-inference-6f7d9c8b5-x2kq9 · fan n/a")

    def test_every_process_in_one_pod_names_it(self) -> None:
        gpu = GpuSample(index=0, processes=k8s_node().gpus[1].processes[1:])
        assert gpu_holder(gpu) == holder_of(BERT)
        assert plain(detail_line(PanelState(gpu, {}), 80)).startswith(
            "pod research/bert-finetune-0 · "
        )

    def test_no_one_pod_no_name(self) -> None:
        node = k8s_node()
        assert gpu_holder(node.gpus[0]) is None  # the vLLM pod and the host's Xorg
        assert gpu_holder(node.gpus[1]) is None  # two pods
        assert gpu_holder(GpuSample(index=0)) is None
        shared = dataclasses.replace(node.gpus[1], holders=(LLAMA, BERT))  # time-slicing
        assert gpu_holder(shared) is None
        for gpu in (node.gpus[0], node.gpus[1], shared):
            assert "pod" not in plain(detail_line(PanelState(gpu, {}), 200))

    def test_a_slurm_job_holding_a_gpu_is_named(self) -> None:
        gpu = GpuSample(index=0, processes=slurm_node().gpus[0].processes[:2])
        assert plain(detail_line(PanelState(gpu, {}), 80)).startswith("Slurm job 4242017 · ")

    def test_a_gone_gpu_names_no_pod(self) -> None:
        gpu = dataclasses.replace(k8s_node().gpus[0], holders=(LLAMA,))
        assert "pod" not in plain(detail_line(PanelState(gpu, {}, gone=True), 120))

    def test_the_panels_mig_rows_name_each_instances_pods(self) -> None:
        lines = [plain(line) for line in mig_lines(PanelState(mig_node().gpus[0], {}), 200)]
        assert lines[0].endswith("1 process · pod ml/llama-70b-inference-6f7d9c8b5-x2kq9")
        assert lines[1].endswith("2 processes · pods research/bert-a-0, research/bert-b-0")
        assert lines[2].endswith("0 processes · pod ci/gpu-test-runner-7")
        assert lines[3].endswith("0 processes")


class TestMigTree:
    def test_each_instance_names_its_pods(self) -> None:
        outline = mig_outline(mig_node())
        ci1 = find(outline, ("ci", 0, 1, 0))
        assert ci1.label.plain.endswith(" · 1 process · pod ml/llama-70b-inference-6f7d9c8b5-x2kq9")
        # One pod: its processes need not repeat it.
        assert [p.label.plain for p in ci1.children] == [
            "PID 41001 · root · C · 30.0GiB · python3 -m vllm.entrypoints.openai.api_server"
        ]
        ci5 = find(outline, ("ci", 0, 5, 0))
        assert ci5.label.plain.endswith(" · pods research/bert-a-0, research/bert-b-0")
        assert [p.label.plain for p in ci5.children] == [
            "PID 61001 · 1000 · pod research/bert-a-0 · C · 6144MiB · python finetune.py --shard a",
            "PID 61002 · 1000 · pod research/bert-b-0 · C · 5120MiB · python finetune.py --shard b",
        ]

    def test_the_kubelets_pod_is_named_with_no_process_seen(self) -> None:
        ci13 = find(mig_outline(mig_node()), ("ci", 0, 13, 0))
        assert ci13.leaf
        assert ci13.label.plain.endswith("0 processes · pod ci/gpu-test-runner-7")
        assert "pod" not in find(mig_outline(mig_node()), ("ci", 0, 14, 0)).label.plain

    def test_the_pod_outlasts_counts_and_utilization_on_a_narrow_line(self) -> None:
        ci13 = find(mig_outline(mig_node()), ("ci", 0, 13, 0))
        from gputop.ui.widgets.mig_tree import MigStyles

        fitted = ci13.fitted(40, MigStyles()).plain
        assert fitted == "CI 0 · pod ci/gpu-test-runner-7 · …"

    def test_device_holders_merge_the_kubelet_and_the_processes(self) -> None:
        device = MigDeviceSample(0, 1, 0, holders=(LLAMA, Owner()))
        found = device_holders(device, [LLAMA, None, BERT])
        assert [h.name for h in found] == [
            "ml/llama-70b-inference-6f7d9c8b5-x2kq9",
            "research/bert-finetune-0",
        ]


def test_columns_have_unique_keys() -> None:
    assert len({c.key for c in COLUMNS}) == len(COLUMNS)


class TestInsideAContainer:
    def test_the_pod_the_gpus_given_and_the_other_containers_memory(self) -> None:
        assert container_line(inside_pod()) == (
            "Given GPU 0 · other containers: 3 processes, 32.5GiB"
            " · pod research/finetune-7c9f5d4b8-qk2lm, container trainer"
        )

    def test_outside_a_container_nothing_is_said(self) -> None:
        assert container_line(k8s_node()) is None
        assert container_line(None) is None

    def test_mig_devices_all_none_and_names_not_seen_here(self) -> None:
        node = mig_node()
        mig = node.gpus[0].mig_devices[1].uuid
        assert mig is not None
        view = ContainerView(
            variable="NVIDIA_VISIBLE_DEVICES",
            requested=f"{mig},MIG-gone",
            given=(mig,),
            unmatched=("MIG-gone",),
        )
        line = container_line(dataclasses.replace(node, container=view))
        assert line == "Given MIG 0:5/0 (not seen here: MIG-gone) · in a container"
        every = ContainerView(variable="NVIDIA_VISIBLE_DEVICES", requested="all", all_gpus=True)
        line = container_line(dataclasses.replace(node, container=every))
        assert line == "Given all GPUs (NVIDIA_VISIBLE_DEVICES=all) · in a container"
        none = ContainerView(variable="NV_GPU", requested="", no_gpus=True)
        line = container_line(dataclasses.replace(node, container=none))
        assert line == "Given no GPU (NV_GPU=(empty)) · in a container"
        wrong = ContainerView(variable="CUDA_VISIBLE_DEVICES", requested="7")
        line = container_line(dataclasses.replace(node, container=wrong))
        assert line == "CUDA_VISIBLE_DEVICES=7 names no GPU here · in a container"

    def test_other_containers_memory_unknown_is_na(self) -> None:
        snap = dataclasses.replace(
            inside_pod(),
            gpus=(GpuSample(index=0, processes=(ProcessSample(9, foreign=True),)),),
            container=ContainerView(pod="p"),
        )
        assert container_line(snap) == "Other containers: 1 process, n/a · pod p"
