"""The nvidia-smi XML reader against every bundled real capture.

Every expected value below was read by hand from the capture file named beside it (MiB as
printed, converted here to bytes), so a misread element fails the test.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import pytest

from gputop.errors import BadCapture
from gputop.model import GpuSample, Reason, Snapshot
from gputop.sinks.json import snapshot_dict
from gputop.sources.smi import blocks as smi_blocks
from gputop.sources.smi import xml as smi_xml
from gputop.sources.smi.xml import parse_document, parse_timestamp
from support.shortcuts import snapshot_from_path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
MIB = 1048576


def _read(name: str) -> bytes:
    return (SNAPSHOTS / name).read_bytes()


def _parse(name: str) -> Snapshot:
    return parse_document(_read(name))


class Gpu(NamedTuple):
    """What one ``<gpu>`` of a capture says, in the capture's own units."""

    name: str
    uuid: str
    pci_bus_id: str
    utilization: tuple[float | None, float | None]  # gpu_util, memory_util (%)
    memory_mib: tuple[int, int]  # fb_memory_usage used, total
    power: tuple[float | None, float | None]  # draw, enforced limit (W)
    temperature: float
    fan: float | None
    pstate: str
    throttle: tuple[str, ...] | None
    processes: tuple[tuple[int, str, int | None], ...] = ()  # pid, type, used_memory MiB


class Capture(NamedTuple):
    timestamp: datetime
    driver: str
    cuda: str | None
    attached: int
    gpus: tuple[Gpu, ...]


_GTX1070 = "GeForce GTX 1070"
_K80 = "Tesla K80"
_RTX3090 = "NVIDIA GeForce RTX 3090"
_A5000 = "NVIDIA RTX A5000"
_WINDOWS_PIDS = (
    *(2320, 2348, 6228, 7828, 8956, 9088, 9516, 9616, 9816, 10320, 10380, 13468),
    *(15516, 15604, 16004),
)

CAPTURES: dict[str, Capture] = {
    "grid-k520-v7.xml": Capture(
        datetime(2017, 2, 11, 23, 31, 58),
        "352.99",
        None,  # v7 has no <cuda_version>
        1,
        (
            Gpu(
                "GRID K520",
                "GPU-cc96d6f4-7f66-e1fc-8179-a45dbd47664c",
                "0000:00:03.0",
                (0, 0),
                (11, 4095),
                (17.97, 125.0),
                31,
                None,
                "P8",
                ("gpu_idle",),
            ),
        ),
    ),
    "gtx1070x6-v9.xml": Capture(
        datetime(2017, 9, 11, 20, 12, 12),
        "384.66",
        None,
        6,
        (
            Gpu(
                _GTX1070,
                "GPU-e511a7b2-f9d5-ba47-9b98-853732ca6c1b",
                "00000000:01:00.0",
                (100, 100),
                (2466, 8112),
                (119.47, 180.0),
                60,
                41,
                "P2",
                (),
                ((1357, "G", 99), (2384, "G", 79), (3093, "C", 2283)),
            ),
            Gpu(
                _GTX1070,
                "GPU-28daffaf-8abe-aaf8-c298-4bd13aecb5e6",
                "00000000:03:00.0",
                (100, 100),
                (2294, 8114),
                (139.30, 180.0),
                59,
                39,
                "P2",
                (),
                ((3093, "C", 2283),),
            ),
            Gpu(
                _GTX1070,
                "GPU-e342d672-4033-5df9-b938-236756ab729c",
                "00000000:04:00.0",
                (100, 100),
                (2294, 8114),
                (135.12, 180.0),
                60,
                42,
                "P2",
                (),
                ((3093, "C", 2283),),
            ),
            Gpu(
                _GTX1070,
                "GPU-93b6a00f-87b9-196d-8c49-4b7e0057e382",
                "00000000:08:00.0",
                (100, 100),
                (2294, 8114),
                (141.53, 180.0),
                58,
                38,
                "P2",
                (),
                ((3093, "C", 2283),),
            ),
            Gpu(
                _GTX1070,
                "GPU-cac69485-70a3-0d36-3929-fa6199c37e70",
                "00000000:09:00.0",
                (100, 100),
                (2294, 8114),
                (141.46, 180.0),
                61,
                43,
                "P2",
                (),
                ((3093, "C", 2283),),
            ),
            Gpu(
                _GTX1070,
                "GPU-d2c1e3bb-4c4e-4eb7-cbd0-e72265d17c31",
                "00000000:0A:00.0",
                (100, 100),
                (2294, 8114),
                (136.00, 180.0),
                59,
                40,
                "P2",
                (),
                ((3093, "C", 2283),),
            ),
        ),
    ),
    "tesla-k80x4-azure-v10.xml": Capture(
        datetime(2019, 12, 3, 5, 27, 0),
        "430.26",
        None,  # <cuda_version>Not Found</cuda_version>
        4,
        (
            Gpu(
                _K80,
                "GPU-c3b26f7a-8dcb-619c-fa1b-8029265a4db0",
                "00001580:00:00.0",
                (99, 29),
                (587, 11441),
                (135.72, 149.0),
                64,
                None,
                "P0",
                ("applications_clocks_setting",),
                ((58813, "C", 576),),
            ),
            Gpu(
                _K80,
                "GPU-b01b80eb-0f18-1df0-cf88-0725bd90f1e1",
                "00002DF7:00:00.0",
                (99, 36),
                (587, 11441),
                (139.71, 149.0),
                69,
                None,
                "P0",
                ("applications_clocks_setting",),
                ((58642, "C", 576),),
            ),
            Gpu(
                _K80,
                "GPU-30bc2701-3bc2-5f35-0ebd-9867a077e138",
                "00004968:00:00.0",
                (0, 0),
                (0, 11441),
                (32.27, 149.0),
                28,
                None,
                "P8",
                ("gpu_idle",),
            ),
            Gpu(
                _K80,
                "GPU-3341aba2-f01d-2c1f-7dd4-e389779faec2",
                "0000F8D6:00:00.0",
                (0, 0),
                (0, 11441),
                (34.44, 149.0),
                26,
                None,
                "P8",
                ("gpu_idle",),
            ),
        ),
    ),
    "gtx1070ti-procs-v11.xml": Capture(
        datetime(2021, 11, 23, 14, 18, 6),
        "470.82.00",
        "11.4",
        1,
        (
            Gpu(
                "NVIDIA GeForce GTX 1070 Ti",
                "GPU-0a6f6ce9-a8af-8c8c-b329-c5338f155fb1",
                "00000000:09:00.0",
                (19, 17),
                (1027, 8116),
                (17.22, 180.0),
                39,
                0,
                "P8",
                ("gpu_idle",),
                ((59377, "G", 596), (59506, "G", 224), (60767, "G", 196), (63265, "G", 5)),
            ),
        ),
    ),
    "tesla-t4-windows-v11.xml": Capture(
        datetime(2022, 9, 21, 10, 35, 2),
        "512.78",
        "11.6",
        1,
        (
            Gpu(
                "Tesla T4",
                "GPU-f6e826dc-c9d7-ac58-6d5d-9048c9e1c124",
                "00000000:01:00.0",
                (0, 0),
                (276, 15360),
                (13.08, 70.0),
                31,
                None,
                "P8",
                ("gpu_idle",),
                tuple((pid, "C+G", None) for pid in _WINDOWS_PIDS),
            ),
        ),
    ),
    "tesla-t4-v11.xml": Capture(
        datetime(2023, 4, 24, 16, 22, 39),
        "515.105.01",
        "11.7",
        1,
        (
            Gpu(
                "Tesla T4",
                "GPU-d37e67a5-91dd-3774-a5cb-99096249601a",
                "00000000:00:1E.0",
                (0, 0),
                (1032, 15360),
                (26.78, 70.0),
                40,
                None,
                "P0",
                (),
                ((675, "G", 22), (5762, "C", 1005)),
            ),
        ),
    ),
    "a100-sxm4-80gb-mig-v12.xml": Capture(
        datetime(2023, 8, 4, 11, 44, 30),
        "535.54.03",
        "12.2",
        4,  # says 4, holds 1 <gpu>
        (
            Gpu(
                "NVIDIA A100-SXM4-80GB",
                "GPU-513536b6-7d19-9063-b049-1e69664bb298",
                "00000000:01:00.0",
                (None, None),  # N/A under MIG
                (50, 81920),
                (67.03, 500.0),
                27,
                None,
                "P0",
                (),
            ),
        ),
    ),
    "rtx3090x4-procs-v12.xml": Capture(
        datetime(2024, 9, 18, 21, 34, 12),
        "550.90.07",
        "12.4",
        4,
        (
            Gpu(
                _RTX3090,
                "GPU-8ad6666a-677c-9f0e-3b58-90220b309ddc",
                "00000000:46:00.0",
                (0, 0),
                (10868, 24576),
                (104.12, 350.0),
                32,
                30,
                "P2",
                (),
                ((642928, "C", 2974), (2651948, "C", 7884)),
            ),
            Gpu(
                _RTX3090,
                "GPU-d45bf8ec-5a88-7fa3-7baa-c0196ebd87c8",
                "00000000:81:00.0",
                (0, 0),
                (10788, 24576),
                (116.39, 350.0),
                31,
                30,
                "P2",
                (),
                ((643178, "C", 2968), (643179, "C", 7810)),
            ),
            Gpu(
                _RTX3090,
                "GPU-0a66778f-a4ed-a1ff-a65e-98882252dca3",
                "00000000:C1:00.0",
                (23, 8),
                (10976, 24576),
                (140.68, 350.0),
                31,
                30,
                "P2",
                (),
                ((2294960, "C", 3180), (2652292, "C", 7786)),
            ),
            Gpu(
                _RTX3090,
                "GPU-4354b5f6-0a4f-36ce-970f-054bc842cb90",
                "00000000:C2:00.0",
                (0, 0),
                (11134, 24576),
                (151.91, 350.0),
                31,
                30,
                "P2",
                (),
                ((642639, "C", 2970), (2652618, "C", 8154)),
            ),
        ),
    ),
    "rtx-a5000x2-v13.xml": Capture(
        datetime(2025, 12, 30, 9, 46, 54),
        "590.44.01",
        "13.1",
        2,
        (
            Gpu(
                _A5000,
                "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
                "00000000:81:00.0",
                (0, 0),
                (22437, 24564),
                (6.41, 230.0),  # average_power_draw; instant is 6.52
                13,
                30,
                "P8",
                ("gpu_idle",),
                ((100477, "C", 22430),),
            ),
            Gpu(
                _A5000,
                "GPU-12345678-aaaa-bbbb-cccc-0123456789cd",
                "00000000:C1:00.0",
                (0, 0),
                (17253, 24564),
                (13.60, 230.0),  # average; instant is 13.59
                15,
                30,
                "P8",
                ("gpu_idle",),
                ((100477, "C", 17246),),
            ),
        ),
    ),
    "rtx3090-deprecated-v13.xml": Capture(
        datetime(2025, 12, 30, 10, 49, 50),
        "590.44.01",
        "13.1",
        1,
        (
            Gpu(
                _RTX3090,
                "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
                "00000000:09:00.0",
                (0, 1),
                (7, 24576),
                (35.06, 350.0),  # average; instant is 35.15
                32,
                0,
                "P8",
                ("sw_power_cap",),
            ),
        ),
    ),
    "gtx1660ti-nodoctype.xml": Capture(
        datetime(2019, 3, 29, 19, 19, 44),
        "418.43",
        "10.1",
        1,
        (
            Gpu(
                "Graphics Device",
                "GPU-304a277d-3545-63b8-3a36-dfde3c992989",
                "00000000:43:00.0",
                (0, 1),
                (0, 5912),
                (8.93, 130.0),
                40,
                0,
                "P8",
                ("gpu_idle",),
            ),
        ),
    ),
}


def test_every_bundled_capture_has_expectations() -> None:
    assert sorted(CAPTURES) == sorted(path.name for path in SNAPSHOTS.glob("*.xml"))


def _check_gpu(gpu: GpuSample, index: int, expected: Gpu) -> None:
    assert gpu.index == index
    assert gpu.name == expected.name
    assert gpu.uuid == expected.uuid
    assert gpu.pci_bus_id == expected.pci_bus_id
    assert (gpu.utilization.gpu, gpu.utilization.memory) == expected.utilization
    used, total = expected.memory_mib
    assert (gpu.memory.used, gpu.memory.total) == (used * MIB, total * MIB)
    assert (gpu.power.draw, gpu.power.limit) == pytest.approx(expected.power)
    assert gpu.temperature.gpu == expected.temperature
    assert gpu.fan_speed == expected.fan
    assert gpu.performance_state == expected.pstate
    assert gpu.throttle_reasons == expected.throttle
    found = tuple(
        (p.pid, p.type, None if p.memory_used is None else p.memory_used // MIB)
        for p in gpu.processes
    )
    assert found == expected.processes
    for process in gpu.processes:
        assert process.memory_used is None or process.memory_used % MIB == 0


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_capture_values(name: str) -> None:
    expected = CAPTURES[name]
    snapshot = _parse(name)
    assert snapshot.timestamp == expected.timestamp
    assert snapshot.driver_version == expected.driver
    assert snapshot.cuda_version == expected.cuda
    assert snapshot.attached_gpus == expected.attached
    assert len(snapshot.gpus) == len(expected.gpus)
    for index, (gpu, facts) in enumerate(zip(snapshot.gpus, expected.gpus, strict=True)):
        _check_gpu(gpu, index, facts)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_unknown_values_are_none_with_a_reason(name: str) -> None:
    """Whatever a capture does not give is None, and says why where the reader looked."""
    for gpu in _parse(name).gpus:
        if gpu.fan_speed is None:
            assert gpu.reason("fan_speed") is not None
        if gpu.utilization.gpu is None:
            assert gpu.reason("utilization.gpu") is not None
        if gpu.power.draw is None:
            assert gpu.reason("power.draw") is not None
        for path, reason in gpu.unavailable:
            assert isinstance(reason, Reason)
            assert path


def test_snapshot_from_path_reads_the_first_document() -> None:
    snapshot = snapshot_from_path(SNAPSHOTS / "tesla-t4-v11.xml")
    assert snapshot.gpus[0].uuid == "GPU-d37e67a5-91dd-3774-a5cb-99096249601a"


# --- reasons ---------------------------------------------------------------------------


def test_na_fan_is_not_available() -> None:
    # <fan_speed>N/A</fan_speed> on every K80 of the Azure VM.
    for gpu in _parse("tesla-k80x4-azure-v10.xml").gpus:
        assert gpu.fan_speed is None
        assert gpu.reason("fan_speed") is Reason.NOT_AVAILABLE


def test_na_persistence_mode_on_windows() -> None:
    gpu = _parse("tesla-t4-windows-v11.xml").gpus[0]
    assert gpu.persistence_mode is None
    assert gpu.reason("persistence_mode") is Reason.NOT_AVAILABLE


def test_deprecated_capture_reads_around_the_deprecated_elements() -> None:
    raw = _read("rtx3090-deprecated-v13.xml")
    deprecated = b"Requested functionality has been deprecated"
    # display_mode, power_state and the application clocks say so in this capture ...
    assert raw.count(deprecated) == 7
    assert b"<power_state>" + deprecated + b"</power_state>" in raw
    gpu = parse_document(raw).gpus[0]
    # ... none of which the model holds: the power element beside them still reads.
    assert gpu.power.draw == 35.06
    assert gpu.power.limit == 350.0
    assert gpu.power.max_limit == 480.0
    assert Reason.DEPRECATED not in {reason for _, reason in gpu.unavailable}


def test_deprecated_text_in_a_read_element_is_deprecated() -> None:
    raw = _read("rtx3090-deprecated-v13.xml")
    text = re.search(rb"<display_mode>([^<]*)</display_mode>", raw)
    assert text is not None
    edited = raw.replace(b"<fan_speed>0 %</fan_speed>", b"<fan_speed>" + text[1] + b"</fan_speed>")
    edited = edited.replace(
        b"<performance_state>P8</performance_state>",
        b"<performance_state>[" + text[1] + b"]</performance_state>",
    )
    gpu = parse_document(edited).gpus[0]
    assert gpu.fan_speed is None
    assert gpu.reason("fan_speed") is Reason.DEPRECATED
    assert gpu.performance_state is None
    assert gpu.reason("performance_state") is Reason.DEPRECATED


def test_utilization_under_mig() -> None:
    gpu = _parse("a100-sxm4-80gb-mig-v12.xml").gpus[0]
    assert gpu.mig_mode is True
    for path in ("utilization.gpu", "utilization.memory", "utilization.encoder"):
        assert gpu.reason(path) is Reason.UNDER_MIG
    assert gpu.utilization == type(gpu.utilization)()


def test_na_utilization_without_mig_is_not_available() -> None:
    raw = _read("tesla-t4-v11.xml").replace(
        b"<gpu_util>0 %</gpu_util>", b"<gpu_util>N/A</gpu_util>"
    )
    gpu = parse_document(raw).gpus[0]
    assert gpu.utilization.gpu is None
    assert gpu.reason("utilization.gpu") is Reason.NOT_AVAILABLE


@pytest.mark.parametrize(
    "name", ["grid-k520-v7.xml", "gtx1070x6-v9.xml", "tesla-k80x4-azure-v10.xml"]
)
def test_old_schemas_do_not_report_mig(name: str) -> None:
    for gpu in _parse(name).gpus:
        assert gpu.mig_mode is None
        assert gpu.reason("mig_mode") is Reason.NOT_REPORTED
        assert gpu.mig_devices == ()


def test_missing_elements_are_not_reported() -> None:
    # v7 has no <utilization><memory_util> removal, so cut elements out of a real capture.
    raw = _read("grid-k520-v7.xml")
    raw = re.sub(rb"<fan_speed>[^<]*</fan_speed>", b"", raw)
    raw = re.sub(rb"<gpu_temp>[^<]*</gpu_temp>", b"", raw)
    raw = re.sub(rb"<uuid>[^<]*</uuid>", b"", raw)
    gpu = parse_document(raw).gpus[0]
    assert gpu.fan_speed is None and gpu.reason("fan_speed") is Reason.NOT_REPORTED
    assert gpu.temperature.gpu is None and gpu.reason("temperature.gpu") is Reason.NOT_REPORTED
    assert gpu.uuid is None and gpu.reason("uuid") is Reason.NOT_REPORTED
    assert gpu.power.draw == 17.97  # the rest still reads


def test_old_schemas_lack_the_newer_temperatures() -> None:
    gpu = _parse("grid-k520-v7.xml").gpus[0]
    assert gpu.temperature.memory is None
    assert gpu.temperature.max_operating is None
    assert (gpu.temperature.slowdown, gpu.temperature.shutdown) == (92, 97)
    a100 = _parse("a100-sxm4-80gb-mig-v12.xml").gpus[0]
    assert a100.temperature.memory == 44
    assert a100.temperature.max_operating == 85
    assert (a100.temperature.slowdown, a100.temperature.shutdown) == (89, 92)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("N/A", Reason.NOT_AVAILABLE),
        ("[N/A]", Reason.NOT_AVAILABLE),
        ("[Not Supported]", Reason.NOT_SUPPORTED),
        ("Not Supported", Reason.NOT_SUPPORTED),
        ("[Insufficient Permissions]", Reason.NO_PERMISSION),
        ("[Unknown Error]", Reason.ERROR),
        ("[GPU is lost]", Reason.GPU_LOST),
        ("Requested functionality has been deprecated", Reason.DEPRECATED),
        ("garbage", Reason.ERROR),
        ("", Reason.ERROR),
    ],
)
def test_reason_texts(text: str, reason: Reason) -> None:
    raw = _read("tesla-t4-v11.xml").replace(
        b"<gpu_temp>40 C</gpu_temp>", f"<gpu_temp>{text}</gpu_temp>".encode()
    )
    gpu = parse_document(raw).gpus[0]
    assert gpu.temperature.gpu is None
    assert gpu.reason("temperature.gpu") is reason


# --- schema variants --------------------------------------------------------------------


def test_power_readings_and_gpu_power_readings() -> None:
    assert b"<power_readings>" in _read("tesla-t4-v11.xml")
    assert b"<gpu_power_readings>" not in _read("tesla-t4-v11.xml")
    assert b"<gpu_power_readings>" in _read("rtx3090x4-procs-v12.xml")
    old = _parse("tesla-t4-v11.xml").gpus[0].power
    assert (old.draw, old.limit, old.default_limit, old.min_limit, old.max_limit) == (
        26.78,
        70.0,
        70.0,
        60.0,
        70.0,
    )
    new = _parse("rtx3090x4-procs-v12.xml").gpus[3].power
    assert (new.draw, new.limit, new.default_limit, new.min_limit, new.max_limit) == (
        151.91,
        350.0,
        350.0,
        100.0,
        400.0,
    )


def test_gpu_power_readings_win_over_module_power_readings() -> None:
    # The A100's <module_power_readings> is all N/A; the GPU's own readings are the ones.
    raw = _read("a100-sxm4-80gb-mig-v12.xml")
    assert b"<module_power_readings>" in raw
    power = parse_document(raw).gpus[0].power
    assert (power.draw, power.limit) == (67.03, 500.0)


def test_average_power_draw_is_preferred_to_instant() -> None:
    raw = _read("rtx-a5000x2-v13.xml")
    assert b"<power_draw>" not in raw
    assert b"<average_power_draw>6.41 W</average_power_draw>" in raw
    assert b"<instant_power_draw>6.52 W</instant_power_draw>" in raw
    assert parse_document(raw).gpus[0].power.draw == 6.41
    only_instant = raw.replace(b"<average_power_draw>6.41 W</average_power_draw>", b"")
    assert parse_document(only_instant).gpus[0].power.draw == 6.52
    na_average = raw.replace(b"6.41 W</average", b"N/A</average")
    gpu = parse_document(na_average).gpus[0]
    assert gpu.power.draw == 6.52
    assert gpu.reason("power.draw") is None


def test_power_draw_na_everywhere_keeps_the_preferred_reason() -> None:
    raw = _read("rtx-a5000x2-v13.xml")
    raw = raw.replace(b"6.41 W</average", b"N/A</average").replace(
        b"6.52 W</inst", b"[Unknown Error]</inst"
    )
    gpu = parse_document(raw).gpus[0]
    assert gpu.power.draw is None
    assert gpu.reason("power.draw") is Reason.NOT_AVAILABLE
    assert [path for path, _ in gpu.unavailable].count("power.draw") == 1


def test_enforced_power_limit_beats_power_limit() -> None:
    raw = _read("grid-k520-v7.xml")
    assert b"<power_limit>125.00 W</power_limit>" in raw
    assert b"<enforced_power_limit>125.00 W</enforced_power_limit>" in raw
    lowered = raw.replace(b"<enforced_power_limit>125.00 W", b"<enforced_power_limit>100.00 W")
    assert parse_document(lowered).gpus[0].power.limit == 100.0
    no_enforced = re.sub(rb"<enforced_power_limit>[^<]*</enforced_power_limit>", b"", raw)
    assert parse_document(no_enforced).gpus[0].power.limit == 125.0


def test_current_power_limit_in_newer_schemas() -> None:
    raw = _read("a100-sxm4-80gb-mig-v12.xml")
    assert b"<enforced_power_limit>" not in raw
    assert b"<current_power_limit>500.00 W</current_power_limit>" in raw
    assert parse_document(raw).gpus[0].power.limit == 500.0


def test_throttle_and_event_reasons() -> None:
    assert b"<clocks_throttle_reasons>" in _read("tesla-k80x4-azure-v10.xml")
    assert b"<clocks_event_reasons>" in _read("rtx3090-deprecated-v13.xml")
    k80 = _parse("tesla-k80x4-azure-v10.xml").gpus
    # "N/A" reasons (hw_thermal_slowdown on a K80) are neither active nor inactive.
    assert [gpu.throttle_reasons for gpu in k80] == [
        ("applications_clocks_setting",),
        ("applications_clocks_setting",),
        ("gpu_idle",),
        ("gpu_idle",),
    ]
    assert _parse("rtx3090-deprecated-v13.xml").gpus[0].throttle_reasons == ("sw_power_cap",)
    # All "Not Active": known, and empty, not None.
    assert _parse("rtx3090x4-procs-v12.xml").gpus[0].throttle_reasons == ()


def test_throttle_reasons_all_na_or_missing() -> None:
    raw = _read("grid-k520-v7.xml")
    all_na = re.sub(
        rb">(Not )?Active</clocks_throttle_reason", b">N/A</clocks_throttle_reason", raw
    )
    gpu = parse_document(all_na).gpus[0]
    assert gpu.throttle_reasons is None
    assert gpu.reason("throttle_reasons") is Reason.NOT_AVAILABLE
    missing = re.sub(
        rb"<clocks_throttle_reasons>.*</clocks_throttle_reasons>", b"", raw, flags=re.S
    )
    gpu = parse_document(missing).gpus[0]
    assert gpu.throttle_reasons is None
    assert gpu.reason("throttle_reasons") is Reason.NOT_REPORTED


def test_mig_devices_of_the_a100() -> None:
    gpu = _parse("a100-sxm4-80gb-mig-v12.xml").gpus[0]
    assert len(gpu.mig_devices) == 4
    for number, device in enumerate(gpu.mig_devices):
        assert device.index == number
        assert device.gpu_instance_id == 3 + number
        assert device.compute_instance_id == 0
        assert device.sm_count == 14
        assert device.memory.total == 19968 * MIB
        assert device.memory.used == 12 * MIB
        assert device.memory.free == 19955 * MIB
        assert device.bar1.total == 32767 * MIB
        assert device.profile == "1g.20gb"
        assert device.profile_derived is True
        assert device.processes == ()
        assert ("utilization.gpu", Reason.UNDER_MIG) in device.unavailable
    assert gpu.memory.reserved == 869 * MIB
    assert gpu.bar1.total == 131072 * MIB


def test_mig_processes_are_attributed_to_their_instance() -> None:
    raw = _read("a100-sxm4-80gb-mig-v12.xml")
    process = (
        b"<processes><process_info><gpu_instance_id>5</gpu_instance_id>"
        b"<compute_instance_id>0</compute_instance_id><pid>4242</pid><type>C</type>"
        b"<process_name>python</process_name><used_memory>3 MiB</used_memory>"
        b"</process_info></processes>"
    )
    gpu = parse_document(raw.replace(b"<processes />", process)).gpus[0]
    assert [p.pid for p in gpu.processes] == [4242]
    assert gpu.processes[0].gpu_instance_id == 5
    owners = [device.gpu_instance_id for device in gpu.mig_devices if device.processes]
    assert owners == [5]


def test_mig_devices_none_text() -> None:
    # v13 writes <mig_devices>None</mig_devices> when MIG is off ...
    raw = _read("rtx3090-deprecated-v13.xml")
    assert re.search(rb"<mig_devices>\s*None\s*</mig_devices>", raw)
    gpu = parse_document(raw).gpus[0]
    assert gpu.mig_devices == ()
    assert gpu.mig_mode is None and gpu.reason("mig_mode") is Reason.NOT_AVAILABLE
    # ... and a MIG-enabled GPU with no instances made yet would write the same.
    a100 = _read("a100-sxm4-80gb-mig-v12.xml")
    empty = re.sub(
        rb"<mig_devices>.*</mig_devices>", b"<mig_devices>None</mig_devices>", a100, flags=re.S
    )
    gpu = parse_document(empty).gpus[0]
    assert gpu.mig_mode is True
    assert gpu.mig_devices == ()


@pytest.mark.parametrize(
    "name",
    [
        "gtx1070ti-procs-v11.xml",
        "tesla-t4-v11.xml",
        "tesla-t4-windows-v11.xml",
        "rtx3090x4-procs-v12.xml",
        "rtx-a5000x2-v13.xml",
    ],
)
def test_mig_devices_none_in_every_mig_capable_schema(name: str) -> None:
    raw = _read(name)
    assert len(re.findall(rb"<mig_devices>\s*None\s*</mig_devices>", raw)) == raw.count(b"<gpu id")
    for gpu in parse_document(raw).gpus:
        assert gpu.mig_devices == ()
        assert gpu.mig_mode is None
        assert gpu.reason("mig_mode") is Reason.NOT_AVAILABLE


def test_attached_gpus_disagreeing_with_the_gpus_present() -> None:
    snapshot = _parse("a100-sxm4-80gb-mig-v12.xml")
    assert snapshot.attached_gpus == 4
    assert len(snapshot.gpus) == 1


def test_pci_domains_of_eight_and_four_digits() -> None:
    k80 = _parse("tesla-k80x4-azure-v10.xml")
    assert [gpu.pci_bus_id for gpu in k80.gpus] == [
        "00001580:00:00.0",
        "00002DF7:00:00.0",
        "00004968:00:00.0",
        "0000F8D6:00:00.0",
    ]
    assert _parse("grid-k520-v7.xml").gpus[0].pci_bus_id == "0000:00:03.0"


def test_pci_bus_id_falls_back_to_the_gpu_id_attribute() -> None:
    raw = re.sub(rb"<pci_bus_id>[^<]*</pci_bus_id>", b"", _read("grid-k520-v7.xml"))
    assert parse_document(raw).gpus[0].pci_bus_id == "0000:00:03.0"


def test_windows_capture_processes_without_memory() -> None:
    gpu = _parse("tesla-t4-windows-v11.xml").gpus[0]
    assert len(gpu.processes) == 15
    assert all(p.memory_used is None and p.type == "C+G" for p in gpu.processes)
    names = {p.pid: p.name for p in gpu.processes if p.name is not None}
    assert names == {
        10380: r"C:\Windows\SystemApps\Microsoft.Windows.Search_cw5n1h2txyewy\SearchApp.exe",
        15604: r"C:\Windows\explorer.exe",
    }
    assert gpu.memory.reserved == 201 * MIB


def test_ecc_counters_old_and_new_layouts() -> None:
    k80 = _parse("tesla-k80x4-azure-v10.xml").gpus
    assert [gpu.ecc_mode for gpu in k80] == [True, True, True, True]
    assert k80[0].ecc_errors.aggregate_corrected == 7
    assert k80[0].ecc_errors.aggregate_uncorrected == 7
    assert k80[1].ecc_errors.aggregate_corrected == 34
    assert k80[1].ecc_errors.aggregate_uncorrected == 4
    assert k80[1].ecc_errors.volatile_corrected == 0
    t4 = _parse("tesla-t4-v11.xml").gpus[0]
    assert t4.ecc_mode is True
    assert (t4.ecc_errors.volatile_corrected, t4.ecc_errors.volatile_uncorrected) == (0, 0)
    grid = _parse("grid-k520-v7.xml").gpus[0]
    assert grid.ecc_mode is None and grid.reason("ecc_mode") is Reason.NOT_AVAILABLE
    assert grid.ecc_errors.volatile_corrected is None
    assert grid.reason("ecc_errors") is Reason.NOT_AVAILABLE


def test_clocks_and_other_fields() -> None:
    gpu = _parse("gtx1070x6-v9.xml").gpus[0]
    assert (gpu.clocks.graphics, gpu.clocks.sm, gpu.clocks.memory, gpu.clocks.video) == (
        1923,
        1923,
        3802,
        1721,
    )
    assert (gpu.max_clocks.graphics, gpu.max_clocks.memory) == (1961, 4004)
    assert gpu.persistence_mode is False
    assert gpu.compute_mode == "Default"
    assert gpu.serial is None and gpu.reason("serial") is Reason.NOT_AVAILABLE
    grid = _parse("grid-k520-v7.xml").gpus[0]
    assert grid.clocks.video is None  # v7 has no video clock
    assert grid.serial == "0321014026924"
    assert grid.architecture is None
    assert _parse("tesla-t4-v11.xml").gpus[0].architecture == "Turing"


def test_document_order_not_minor_number() -> None:
    # The Azure capture lists minor numbers 1, 2, 3, 0: indices follow the document.
    raw = _read("tesla-k80x4-azure-v10.xml")
    assert re.findall(rb"<minor_number>(\d+)</minor_number>", raw) == [b"1", b"2", b"3", b"0"]
    assert [gpu.index for gpu in parse_document(raw).gpus] == [0, 1, 2, 3]


# --- DTDs and hostile documents ---------------------------------------------------------

_INLINE_DTD = b"""<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log [
<!-- nvsmi_device_v7.dtd -->
<!ELEMENT nvidia_smi_log        (timestamp, driver_version,
                                 attached_gpus, error_string?, gpu*)>
<!ELEMENT timestamp             (#PCDATA)>
<!ELEMENT driver_version        (#PCDATA)>
<!ELEMENT attached_gpus         (#PCDATA)>
<!ELEMENT gpu                   (product_name, uuid)>
<!ATTLIST gpu id                CDATA #REQUIRED>
<!ELEMENT product_name          (#PCDATA)>
<!ELEMENT uuid                  (#PCDATA)>
%s]>
<nvidia_smi_log>
\t<timestamp>Sat Feb 11 23:31:58 2017</timestamp>
\t<driver_version>352.99</driver_version>
\t<attached_gpus>1</attached_gpus>
\t<gpu id="0000:00:03.0">
\t\t<product_name>GRID K520</product_name>
\t\t<uuid>GPU-cc96d6f4-7f66-e1fc-8179-a45dbd47664c</uuid>
\t</gpu>
</nvidia_smi_log>
"""


def test_inline_dtd_with_element_declarations_is_accepted() -> None:
    snapshot = parse_document(_INLINE_DTD % b"")
    assert snapshot.timestamp == datetime(2017, 2, 11, 23, 31, 58)
    assert snapshot.gpus[0].name == "GRID K520"
    assert snapshot.gpus[0].pci_bus_id == "0000:00:03.0"


@pytest.mark.parametrize(
    "declaration",
    [
        b'<!ENTITY lol "lol">',
        b'<!ENTITY x SYSTEM "file:///etc/passwd">',
        b'<!ENTITY % p SYSTEM "http://example.invalid/p.dtd">',
    ],
)
def test_inline_dtd_with_entities_is_refused(declaration: bytes) -> None:
    with pytest.raises(BadCapture, match="entit"):
        parse_document(_INLINE_DTD % declaration)


def test_entity_hidden_after_a_fake_root_in_a_comment_is_refused() -> None:
    sneaky = b"<!-- <nvidia_smi_log> -->\n" + b'<!ENTITY a "aaaaaaaaaa">'
    with pytest.raises(BadCapture, match="entit"):
        parse_document(_INLINE_DTD % sneaky)


def test_external_dtd_reference_is_not_fetched() -> None:
    # Every v7-v13 capture names "nvsmi_device_vN.dtd"; a hostile one could name any URL.
    raw = _read("grid-k520-v7.xml").replace(
        b'SYSTEM "nvsmi_device_v7.dtd"', b'SYSTEM "http://example.invalid/x.dtd"'
    )
    assert parse_document(raw).gpus[0].name == "GRID K520"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "no <nvidia_smi_log>"),
        (b"<html><body>hi</body></html>", "no <nvidia_smi_log>"),
        (b"<nvidia_smi_log><gpu></nvidia_smi_log>", "malformed"),
        (b"<other><nvidia_smi_log/></other>", "not an nvidia-smi log"),
        (b'<?xml version="1.0" encoding="shift_jis"?><nvidia_smi_log/>', "unreadable"),
        (b'<?xml version="1.0" encoding="no-such"?><nvidia_smi_log/>', "unreadable"),
    ],
)
def test_bad_documents(data: bytes, message: str) -> None:
    with pytest.raises(BadCapture, match=message):
        parse_document(data)


def test_oversized_document_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputop.sources.smi import xml as smi_xml

    monkeypatch.setattr(smi_xml, "MAX_DOCUMENT_BYTES", 1000)
    with pytest.raises(BadCapture, match="larger than"):
        parse_document(_read("grid-k520-v7.xml"))


def test_minimal_document_gives_an_empty_snapshot() -> None:
    snapshot = parse_document(b"<nvidia_smi_log></nvidia_smi_log>")
    assert snapshot == Snapshot(timestamp=None)


# --- values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fri Aug  4 11:44:30 2023", datetime(2023, 8, 4, 11, 44, 30)),
        ("Tue Dec 30 10:49:50 2025", datetime(2025, 12, 30, 10, 49, 50)),
        ("  Sat Feb 11 23:31:58 2017\n", datetime(2017, 2, 11, 23, 31, 58)),
        ("Sat Feb 30 23:31:58 2017", None),
        ("Sat Foo 11 23:31:58 2017", None),
        ("2017-02-11 23:31:58", None),
        ("Sat Feb 11 25:31:58 2017", None),
        ("Sat Feb \u0661\u0661 23:31:58 2017", None),  # Arabic-Indic digits
        ("", None),
        (None, None),
    ],
)
def test_parse_timestamp(text: str | None, expected: datetime | None) -> None:
    assert parse_timestamp(text) == expected


@pytest.mark.parametrize(
    ("text", "value", "reason"),
    [
        ("4095 MiB", 4095 * MIB, None),
        ("2 GiB", 2 * 1024 * MIB, None),
        ("512 KiB", 512 * 1024, None),
        ("100", 100 * MIB, None),  # nvidia-smi's unit is MiB
        ("1e309 MiB", None, Reason.INVALID),  # inf, never "1" read out of "1e309"
        ("1e400 MiB", None, Reason.INVALID),
        pytest.param("9" * 400 + " MiB", None, Reason.INVALID, id="400-digits"),
        ("-1 MiB", None, Reason.INVALID),
        ("-0 MiB", 0, None),
        ("5 W", None, Reason.INVALID),  # not a unit of memory
        ("12 TB", None, Reason.INVALID),
        ("N/A", None, Reason.NOT_AVAILABLE),
    ],
)
def test_memory_sizes(text: str, value: int | None, reason: Reason | None) -> None:
    raw = _read("grid-k520-v7.xml").replace(b"<used>11 MiB</used>", f"<used>{text}</used>".encode())
    gpu = parse_document(raw).gpus[0]
    assert gpu.memory.used == value
    assert gpu.reason("memory.used") is reason


def test_impossible_readings_are_invalid_not_made_up() -> None:
    """The readings of the issue: each is None with its reason, in the model and in JSON."""
    raw = _read("rtx3090x4-procs-v12.xml")
    for old, new in [
        (b"<used>10868 MiB</used>", b"<used>1e400 MiB</used>"),
        (b"<gpu_util>0 %</gpu_util>", b"<gpu_util>-7 %</gpu_util>"),
        (b"<memory_util>0 %</memory_util>", b"<memory_util>1e308 %</memory_util>"),
        (b"<free>13385 MiB</free>", b"<free>-13385 MiB</free>"),
        (b"<fan_speed>30 %</fan_speed>", b"<fan_speed>-99999 %</fan_speed>"),
        (b"<performance_state>P2</performance_state>", b"<performance_state></performance_state>"),
        (b"<gpu_temp>32 C</gpu_temp>", b"<gpu_temp>32 W</gpu_temp>"),
    ]:
        assert old in raw, old
        raw = raw.replace(old, new, 1)
    gpu = parse_document(raw).gpus[0]
    fields = {
        "memory.used": gpu.memory.used,
        "utilization.gpu": gpu.utilization.gpu,
        "utilization.memory": gpu.utilization.memory,
        "memory.free": gpu.memory.free,
        "fan_speed": gpu.fan_speed,
        "performance_state": gpu.performance_state,
        "temperature.gpu": gpu.temperature.gpu,
    }
    assert fields == dict.fromkeys(fields)
    unavailable = snapshot_dict(Snapshot(timestamp=None, gpus=(gpu,)))["gpus"][0]["unavailable"]
    assert {path: unavailable[path] for path in fields} == dict.fromkeys(
        fields, "invalid value in the recording"
    )
    assert gpu.memory.total == 24576 * MIB  # the rest still reads
    assert gpu.utilization.encoder == 0.0


def test_a_percentage_may_be_rounded_above_100() -> None:
    raw = _read("rtx3090x4-procs-v12.xml").replace(
        b"<gpu_util>0 %</gpu_util>", b"<gpu_util>100.4 %</gpu_util>", 1
    )
    assert parse_document(raw).gpus[0].utilization.gpu == 100.4
    over = raw.replace(b"<gpu_util>100.4 %", b"<gpu_util>101 %", 1)
    assert parse_document(over).gpus[0].reason("utilization.gpu") is Reason.INVALID


def test_huge_and_unicode_numbers_do_not_crash() -> None:
    raw = _read("a100-sxm4-80gb-mig-v12.xml")
    raw = raw.replace(
        b"<gpu_temp>27 C</gpu_temp>", ("<gpu_temp>" + "9" * 500 + "</gpu_temp>").encode()
    )
    raw = raw.replace(b"<index>0</index>", "<index>²</index>".encode())
    raw = raw.replace(b"<total>81920 MiB</total>", b"<total>0 MiB</total>")
    raw = raw.replace(
        b"<attached_gpus>4</attached_gpus>",
        ("<attached_gpus>" + "7" * 5000 + "</attached_gpus>").encode(),
    )
    snapshot = parse_document(raw)
    gpu = snapshot.gpus[0]
    assert gpu.temperature.gpu is None and gpu.reason("temperature.gpu") is Reason.INVALID
    assert gpu.mig_devices[0].index is None
    assert gpu.memory.total == 0
    assert gpu.mig_devices[0].profile is None  # no profile from a GPU of 0 bytes
    assert snapshot.attached_gpus is None


def test_whitespace_inside_values_is_tolerated() -> None:
    raw = _read("tesla-t4-v11.xml").replace(
        b"<product_name>Tesla T4</product_name>", b"<product_name>\n\t  Tesla T4 \n</product_name>"
    )
    assert parse_document(raw).gpus[0].name == "Tesla T4"


# --- cutting and remembering children of <gpu> ------------------------------------------
# The reader cuts unread children of <gpu> by their lines and remembers the values of the
# children it read by their bytes (smi_blocks); a whole parse of the same bytes is the
# reference it must agree with, whatever it saw before.


def _whole(data: bytes) -> Snapshot:
    """The snapshot of a parse of the whole document, nothing cut by lines or remembered."""
    root, gpus = smi_xml._parse_whole(data)
    assert root.tag == "nvidia_smi_log"
    return smi_xml._snapshot(root, gpus)


def _vary(raw: bytes, second: int) -> bytes:
    """A capture as it could read ``second`` seconds later: readings changed, the rest not."""

    def reading(match: re.Match[bytes]) -> bytes:
        tag, number = match.group(1), int(match.group(2))
        return b"<%s>%d%s</%s>" % (tag, number + second % 7, match.group(3), tag)

    return re.sub(
        rb"<(gpu_util|memory_util|gpu_temp|tx_util|rx_util|graphics_clock)>(\d+)([^<]*)</\1>",
        reading,
        raw,
    )


def test_a_recording_reads_as_each_document_alone() -> None:
    names = sorted(CAPTURES)
    for second in range(12):
        for name in names[second % 3 :: 3] if second < 6 else names:
            raw = _vary(_read(name), second)
            assert parse_document(raw) == _whole(raw), (name, second)


def test_layout_reuse_sees_a_child_that_moved() -> None:
    raw = _read("rtx3090-deprecated-v13.xml")
    parse_document(raw)
    # As many children's lines as before, but the UUID sits on the serial's line, and a
    # child of <pci> at the indentation of the children of <gpu>.
    moved = raw.replace(b"</serial>\n\t\t<uuid>", b"</serial><uuid>", 1).replace(
        b"\t\t\t<pci_bus>", b"\t\t<pci_bus>", 1
    )
    assert moved.count(b"\n\t\t<") == raw.count(b"\n\t\t<")
    assert parse_document(moved) == _whole(moved)
    assert parse_document(moved).gpus[0].uuid == "GPU-12345678-aaaa-bbbb-cccc-0123456789ab"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A child that is read, not on a line of its own.
        (
            b"</product_brand>\n\t\t<product_architecture>",
            b"</product_brand><product_architecture>",
        ),
        # One that is not read, on the line of one that is.
        (b"</persistence_mode>\n\t\t<addressing_mode>", b"</persistence_mode><addressing_mode>"),
        # A child that is read, inside one that is not, on a line at the children's indent.
        (
            b"\t\t<display_active>Enabled</display_active>\n",
            b"\t\t<display_active>\n\t\t<fan_speed>99 %</fan_speed>\n\t\t</display_active>\n",
        ),
        # Attributes and empty-element tags.
        (b"<fan_speed>", b'<fan_speed unit="%">'),
        (b"<display_active>Enabled</display_active>", b'<display_active a="1"/>'),
        (b"<fan_speed>0 %</fan_speed>", b"<fan_speed/>"),
        (b"<fan_speed>0 %</fan_speed>", b"<fan_speed />"),
        # Text in <gpu> outside its children.
        (b'<gpu id="00000000:09:00.0">\n', b'<gpu id="00000000:09:00.0">text\n'),
        # Windows line ends.
        (b"\n", b"\r\n"),
    ],
)
def test_children_on_unusual_lines_read_as_a_whole_parse_would(old: bytes, new: bytes) -> None:
    raw = _read("rtx3090-deprecated-v13.xml")
    assert old in raw
    changed = raw.replace(old, new) if old == b"\n" else raw.replace(old, new, 1)
    assert parse_document(changed) == _whole(changed)
    assert parse_document(changed) == _whole(changed)  # and once its children are known


def test_pci_throughput_does_not_change_the_bus_id() -> None:
    raw = _read("rtx-a5000x2-v13.xml")
    first = parse_document(raw)
    busy = raw.replace(b"<tx_util>488 KB/s</tx_util>", b"<tx_util>91234 KB/s</tx_util>")
    assert busy != raw
    assert parse_document(busy) == first
    # A second <pci_bus_id>, before the one at its place: the first one counts.
    extra = raw.replace(
        b"\t\t\t<pci_bus>81</pci_bus>", b"\t\t\t<pci_bus>81</pci_bus><pci_bus_id>X</pci_bus_id>"
    )
    assert parse_document(extra).gpus[0].pci_bus_id == "X" == _whole(extra).gpus[0].pci_bus_id
    # One inside another child of <pci>, on a line of its own: not the <pci>'s.
    nested = raw.replace(b"<pci_bus_id>00000000:81:00.0<", b"<pci_bus_id>X<", 1)
    nested = nested.replace(b"<pci_bus>81</pci_bus>", b"<pci_bus>", 1)
    nested = nested.replace(b"<pci_sub_system_id>147E10DE</pci_sub_system_id>", b"</pci_bus>", 1)
    assert parse_document(nested) == _whole(nested)
    assert parse_document(nested).gpus[0].pci_bus_id == "00000000:81:00.0"  # from <gpu id>


def test_remembered_values_follow_the_document_encoding() -> None:
    raw = _read("grid-k520-v7.xml").replace(b"GRID K520", b"GRID \xc3\xa9")
    latin = raw.replace(b'<?xml version="1.0" ?>', b'<?xml version="1.0" encoding="ISO-8859-1"?>')
    assert latin != raw
    for data in (raw, latin, raw):
        assert parse_document(data) == _whole(data)
    assert parse_document(raw).gpus[0].name == "GRID \u00e9"
    assert parse_document(latin).gpus[0].name == "GRID \u00c3\u00a9"


def test_an_inline_dtd_after_a_known_beginning_is_still_checked() -> None:
    # A document without a DTD is found safe; the next begins the same up to where the
    # first one's root began, then declares an entity: it is refused all the same.
    plain = b'<?xml version="1.0" ?>\n<nvidia_smi_log></nvidia_smi_log>'
    parse_document(plain)
    bomb = b'<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY a "b">]>\n' + plain[23:]
    with pytest.raises(BadCapture, match="entit"):
        parse_document(bomb)
    parse_document(_INLINE_DTD % b"")
    with pytest.raises(BadCapture, match="entit"):
        parse_document(_INLINE_DTD % b'<!ENTITY lol "lol">')
    assert parse_document(_INLINE_DTD % b"").gpus[0].name == "GRID K520"


def test_what_is_remembered_stays_bounded() -> None:
    raw = _read("rtx3090x4-procs-v12.xml")
    for second in range(2 * smi_blocks._MEMO_ENTRIES // 4 + 10):
        data = raw.replace(b"<gpu_util>", b"<gpu_util>%d" % second)
        parse_document(data)
        assert len(smi_blocks.MEMO.young) <= smi_blocks._MEMO_ENTRIES
        assert len(smi_blocks.MEMO.old) <= smi_blocks._MEMO_ENTRIES
    assert len(smi_blocks._LAYOUTS) <= smi_blocks._LAYOUTS_KEPT
    assert len(smi_xml._SAFE_HEADS) <= smi_xml._SAFE_HEADS_KEPT
    assert parse_document(data) == _whole(data)
