"""`nvidia-smi -q` text logs: values checked against the bundled files, and against the XML
reader (the text gives what the XML reader gives for the same values)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gputop.errors import BadCapture
from gputop.model import GpuSample, Reason
from gputop.sinks.smi_xml import snapshot_to_xml
from gputop.sources.recordings.formats import detect
from gputop.sources.smi.text import looks_like, open_text, parse_log
from gputop.sources.smi.xml import parse_document

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
LOGS = sorted(SNAPSHOTS.glob("*-q.txt"))
MIB = 2**20


def detected(path: Path) -> str | None:
    """The name of the format gputop tells ``path``'s content to be."""
    found = detect(path.read_bytes()[:4096])
    return None if found is None else found.name


def test_there_are_five_bundled_text_logs() -> None:
    assert len(LOGS) >= 5
    credits = (SNAPSHOTS / "README.md").read_text()
    for path in SNAPSHOTS.glob("*.txt"):
        assert f"`{path.name}`" in credits


def field(text: str, section: str | None, label: str) -> str:
    """The value of ``label`` (under the GPU's ``section`` heading), read with a regex."""
    if section is None:
        found = re.search(rf"^\s*{re.escape(label)}\s+: (.*)$", text, re.MULTILINE)
    else:
        found = re.search(
            rf"^    {re.escape(section)}\s*\n(?:        .*\n)*?\s+{re.escape(label)}\s+: (.*)$",
            text,
            re.MULTILINE,
        )
    assert found is not None, (section, label)
    return found.group(1).strip()


def number(value: str) -> float:
    return float(value.split()[0])


@pytest.mark.parametrize("path", LOGS, ids=lambda path: path.name)
def test_values_match_the_file(path: Path) -> None:
    text = path.read_text()
    with open_text(path) as log:
        snapshot = log.snapshot(0)
        assert len(log) == text.count("==============NVSMI LOG==============")
    # 6xx drivers add ` [Deprecated; ... Use KMD Version instead]`: the version is before it.
    assert snapshot.driver_version == field(text, None, "Driver Version").split(" [")[0]
    assert snapshot.attached_gpus == int(field(text, None, "Attached GPUs"))
    assert snapshot.timestamp is not None
    assert snapshot.timestamp.strftime("%H:%M:%S") in field(text, None, "Timestamp")
    # The first log of a stream; in it, one block per GPU (8 in a box's `nvidia-smi -q`).
    first = text.split("==============NVSMI LOG==============")[1]
    blocks = re.split(r"^(?=GPU [0-9A-Fa-f]+:[0-9A-Fa-f]{2}:)", first, flags=re.MULTILINE)[1:]
    assert len(snapshot.gpus) == len(blocks) >= 1
    for gpu, block in zip(snapshot.gpus, blocks, strict=True):
        _gpu_matches_its_block(gpu, block)


def _gpu_matches_its_block(gpu: GpuSample, text: str) -> None:
    assert gpu.name == field(text, None, "Product Name")
    assert gpu.uuid == field(text, None, "GPU UUID")
    assert gpu.pci_bus_id == field(text, "PCI", "Bus Id")
    assert gpu.memory.total == number(field(text, "FB Memory Usage", "Total")) * MIB
    assert gpu.memory.used == number(field(text, "FB Memory Usage", "Used")) * MIB
    assert gpu.temperature.gpu == number(field(text, "Temperature", "GPU Current Temp"))
    # Before 535 the section is `Power Readings` and its limit `Power Limit`.
    power = "GPU Power Readings" if "    GPU Power Readings\n" in text else "Power Readings"
    if re.search(r"^\s+Average Power Draw\s+:", text, re.MULTILINE):
        average = field(text, power, "Average Power Draw")
        instant = field(text, power, "Instantaneous Power Draw")
        assert gpu.power.draw == number(instant if average == "N/A" else average)
    else:  # older drivers (535 here) give one reading
        assert gpu.power.draw == number(field(text, power, "Power Draw"))
    limit = "Current Power Limit" if power == "GPU Power Readings" else "Power Limit"
    assert gpu.power.limit == number(field(text, power, limit))
    assert gpu.clocks.sm == number(field(text, "Clocks", "SM"))
    assert gpu.performance_state == field(text, None, "Performance State")
    # 590 spells it `GPU`, 535 `Gpu`.
    utilization = field(text, "Utilization", "GPU" if "        GPU  " in text else "Gpu")
    if utilization == "N/A":
        assert gpu.utilization.gpu is None
        assert gpu.reason("utilization.gpu") in (Reason.UNDER_MIG, Reason.NOT_AVAILABLE)
    else:
        assert gpu.utilization.gpu == number(utilization)
    pids = [int(pid) for pid in re.findall(r"Process ID\s+: (\d+)", text)]
    assert [process.pid for process in gpu.processes] == pids
    names = re.findall(r"^\s+Name\s+: (.*?)\s*$", text, re.MULTILINE)
    assert [process.name for process in gpu.processes] == names
    instances = [int(i) for i in re.findall(r"^        GPU Instance ID\s+: (\d+)", text, re.M)]
    assert [device.gpu_instance_id for device in gpu.mig_devices] == instances
    mig = field(text, "MIG Mode", "Current")
    assert gpu.mig_mode is {"Enabled": True, "Disabled": False, "N/A": None}[mig]


@pytest.mark.parametrize("path", LOGS, ids=lambda path: path.name)
def test_the_xml_reader_gives_the_same_values(path: Path) -> None:
    """What the text gives, spelled as `nvidia-smi -q -x` spells it and read back by the
    XML reader, is the same snapshot: every value, every reason, MIG devices, processes."""
    snapshot = parse_log(path.read_bytes())

    assert parse_document(snapshot_to_xml(snapshot)) == snapshot


def test_mig_devices_profiles_and_processes() -> None:
    gpu = parse_log((SNAPSHOTS / "h100-mig-590-q.txt").read_bytes()).gpus[0]

    assert [(d.gpu_instance_id, d.compute_instance_id, d.profile) for d in gpu.mig_devices] == [
        (2, 0, "3g.40gb"),
        (3, 0, "2g.20gb"),
        (9, 0, "1g.10gb"),
        (10, 0, "1g.10gb"),
    ]
    assert gpu.mig_devices[0].sm_count == 60
    assert gpu.mig_devices[0].memory.total == 40448 * MIB
    # The three processes run in GPU instance 2: they belong to that MIG device alone.
    assert [p.pid for p in gpu.mig_devices[0].processes] == [21180, 21181, 21198]
    assert all(not d.processes for d in gpu.mig_devices[1:])
    assert gpu.utilization.gpu is None and gpu.reason("utilization.gpu") is Reason.UNDER_MIG


def test_a_q_l_stream_is_one_snapshot_per_log() -> None:
    with open_text(SNAPSHOTS / "h100-mig-590-q-l.txt") as log:
        assert len(log) == 2
        first, second = log.snapshot(0), log.snapshot(1)
        assert log.timestamp(1) == second.timestamp
        assert second.timestamp is not None
        assert log.index_at(second.timestamp) == 1
    assert first.gpus[0].processes == ()
    assert len(second.gpus[0].processes) == 3


def test_one_gpu_of_eight(tmp_path: Path) -> None:
    """`nvidia-smi -q -i 3`: the driver has 8 GPUs, the log holds one."""
    text = (SNAPSHOTS / "h100-590-q.txt").read_text()
    path = tmp_path / "one.txt"
    path.write_text(re.sub(r"(Attached GPUs\s+: )1", r"\g<1>8", text))

    snapshot = open_text(path).snapshot(0)

    assert snapshot.attached_gpus == 8
    assert len(snapshot.gpus) == 1


OLD_DRIVER = """\
==============NVSMI LOG==============

Timestamp                           : Wed Jun 28 11:21:36 2017
Driver Version                      : 375.66

Attached GPUs                       : 2
GPU 0000:06:00.0
    Product Name                    : GeForce GTX 1080
    Clocks Throttle Reasons
        Idle                        : Not Active
        SW Power Cap                : Active
    FB Memory Usage
        Total                       : 8113 MiB
        Used                        : 7603 MiB
        Free                        : 510 MiB
    Utilization
        Gpu                         : 97 %
        Memory                      : 42 %
    Temperature
        GPU Current Temp            : 77 C
        GPU Shutdown Temp           : 99 C
        GPU Slowdown Temp           : 96 C
    Power Readings
        Power Management            : Supported
        Power Draw                  : 164.21 W
        Power Limit                 : 180.00 W
        Enforced Power Limit        : 180.00 W
    Processes
        Process ID                  : 2046
            Type                    : C
            Name                    : python
            Used GPU Memory         : 7591 MiB
        Process ID                  : 2100
            Type                    : G
            Name                    : /usr/lib/xorg/Xorg
            Used GPU Memory         : 10 MiB
GPU 0000:07:00.0
    Product Name                    : GeForce GTX 1080
    Utilization
        Gpu                         : 0 %
        Memory                      : 0 %
    Processes                       : None
"""


def test_an_old_driver_layout() -> None:
    snapshot = parse_log(OLD_DRIVER.encode())

    first, second = snapshot.gpus
    assert snapshot.cuda_version is None
    assert first.pci_bus_id == "0000:06:00.0"  # 3xx text gives it in the GPU's header only
    assert first.utilization.gpu == 97 and first.utilization.memory == 42
    assert first.memory.used == 7603 * MIB
    assert first.temperature.slowdown == 96 and first.temperature.shutdown == 99
    assert first.power.draw == 164.21 and first.power.limit == 180
    assert first.throttle_reasons == ("sw_power_cap",)
    assert [(p.pid, p.type, p.name, p.memory_used) for p in first.processes] == [
        (2046, "C", "python", 7591 * MIB),
        (2100, "G", "/usr/lib/xorg/Xorg", 10 * MIB),
    ]
    assert second.index == 1 and second.processes == ()
    assert second.power.draw is None and second.reason("power.draw") is Reason.NOT_REPORTED


def test_sniffing() -> None:
    for path in LOGS:
        assert looks_like(path.read_bytes()[:4096])
        assert detected(path) == "text"
    assert not looks_like(b"<?xml version='1.0'?><nvidia_smi_log>")
    assert detected(next(SNAPSHOTS.glob("*.xml"))) == "xml"


@pytest.mark.parametrize(
    "data",
    [
        b"==============NVSMI LOG==============\n\x00\x01\x02",
        b"==============NVSMI LOG==============\nnothing here\n",
        b"==============NVSMI LOG==============\n",
    ],
)
def test_bad_logs_are_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    with pytest.raises(BadCapture, match=str(path)):
        open_text(path)


MIG_470 = """\
==============NVSMI LOG==============

Timestamp                                 : Fri Jan 27 11:32:31 2023
Driver Version                            : 470.82.01
CUDA Version                              : 11.4

Attached GPUs                             : 1
GPU 00000000:00:04.0
    Product Name                          : NVIDIA A100-SXM4-40GB
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG Devices
        MIG Device
            Index                         : 0
            GPU Instance ID               : 1
            Compute Instance ID           : 0
            Device Attributes
                Shared
                    Multiprocessor count  : 42
            FB Memory Usage
                Total                     : 19968 MiB
                Used                      : 1003 MiB
                Free                      : 18965 MiB
        MIG Device
            Index                         : 1
            GPU Instance ID               : 2
            Compute Instance ID           : 0
            Device Attributes
                Shared
                    Multiprocessor count  : 42
            FB Memory Usage
                Total                     : 19968 MiB
                Used                      : 3 MiB
                Free                      : 19965 MiB
    FB Memory Usage
        Total                             : 40536 MiB
        Used                              : 1006 MiB
        Free                              : 39530 MiB
    Utilization
        Gpu                               : N/A
        Memory                            : N/A
    Processes
        GPU instance ID                   : 1
        Compute instance ID               : 0
        Process ID                        : 12345
            Type                          : C
            Name                          : python
            Used GPU Memory               : 1000 MiB
"""


def test_a_470_mig_devices_section() -> None:
    (gpu,) = parse_log(MIG_470.encode()).gpus

    assert gpu.mig_mode is True
    assert [(d.gpu_instance_id, d.profile, d.memory.used) for d in gpu.mig_devices] == [
        (1, "3g.20gb", 1003 * MIB),
        (2, "3g.20gb", 3 * MIB),
    ]
    assert [(p.pid, p.gpu_instance_id, p.compute_instance_id) for p in gpu.processes] == [
        (12345, 1, 0)
    ]
    assert [p.pid for p in gpu.mig_devices[0].processes] == [12345]
    assert gpu.utilization.gpu is None and gpu.reason("utilization.gpu") is Reason.UNDER_MIG


def test_a_log_pasted_indented_or_with_windows_line_ends(tmp_path: Path) -> None:
    original = (SNAPSHOTS / "h100-mig-590-q.txt").read_text()
    expected = parse_log(original.encode())
    indented = "".join(f"    {line}" for line in original.splitlines(keepends=True))
    crlf = original.replace("\n", "\r\n")

    for name, text in (("indented.txt", indented), ("crlf.txt", crlf)):
        path = tmp_path / name
        path.write_bytes(text.encode())
        assert detected(path) == "text"
        with open_text(path) as log:
            assert log.snapshot(0) == expected


def test_a_timestamp_with_an_absurd_year_is_no_time() -> None:
    # Found by the mutation test: the year overflowed datetime's C int (an OverflowError).
    log = OLD_DRIVER.replace("11:21:36 2017", "11:21:36 999999999992017")

    assert parse_log(log.encode()).timestamp is None
