"""One ``<gpu>`` of an nvidia-smi XML document as a GpuSample.

Each child of ``<gpu>`` that the reader uses is converted on its own into a ``Part``: its
value and the (field path, Reason) of each value it lacks. A part depends on nothing but
the child's own content, which lets ``smi_blocks`` remember parts by the child's bytes
across the documents of a recording. ``gpu_sample`` then puts the parts together, in the
order the fields are listed in ``GpuSample``; the few values that depend on two children
(utilization under MIG, the MIG devices, the PCI address falling back to the ``id``
attribute) are settled there.

nvidia-smi's XML changed a lot between schema v7 (driver 352) and v13 (driver 590): power
moved from ``power_readings`` to ``gpu_power_readings``, ``power_draw`` split into
average/instant, throttle reasons became clock-event reasons, ECC counters were
regrouped. We key on the elements present, never on the DTD version.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Power,
    ProcessSample,
    Reason,
    Temperature,
    Unavailable,
    Utilization,
)
from gputop.model.health import RemappedRows, RetiredPages
from gputop.model.mig_profiles import derive_profile
from gputop.sources.smi.values import (
    Missing,
    Reader,
    celsius,
    count,
    fan_percent,
    flag,
    megahertz,
    percent,
    pstate,
    size,
    text,
    watts,
    watts_of,
    whole_count,
)

Element = ET.Element
Part = tuple[Any, Unavailable]
"""A child's value (its type depends on the child) and why each of its values is missing."""

_NOT_REPORTED = Reason.NOT_REPORTED
_NOTHING: Unavailable = ()


def _part(read: Reader[Any], path: str, child: str | None = None) -> Callable[[Element], Part]:
    """A child read whole by one of ``smi_values``' readers (or its own ``child`` element)."""

    def convert(node: Element) -> Part:
        missing: Missing = []
        return read(node if child is None else node.find(child), path, missing), tuple(missing)

    return convert


def _memory_of(node: Element, paths: tuple[str, ...], missing: Missing) -> Memory:
    find = node.find
    reserved = find("reserved")
    return Memory(
        total=size(find("total"), paths[0], missing),
        used=size(find("used"), paths[1], missing),
        free=size(find("free"), paths[2], missing),
        reserved=None if reserved is None else size(reserved, paths[3], missing),
    )


def _memory(prefix: str) -> Callable[[Element], Part]:
    paths = tuple(f"{prefix}.{name}" for name in ("total", "used", "free", "reserved"))

    def convert(node: Element) -> Part:
        missing: Missing = []
        return _memory_of(node, paths, missing), tuple(missing)

    return convert


_UTILIZATION = (
    ("gpu_util", "utilization.gpu"),
    ("memory_util", "utilization.memory"),
    ("encoder_util", "utilization.encoder"),
    ("decoder_util", "utilization.decoder"),
)


def _utilization(node: Element) -> Part:
    find = node.find
    missing: Missing = []
    values = [percent(find(tag), path, missing) for tag, path in _UTILIZATION]
    return Utilization(*values), tuple(missing)


def _temperature(node: Element) -> Part:
    find = node.find
    missing: Missing = []
    memory = find("memory_temp")
    max_operating = find("gpu_temp_max_gpu_threshold")
    return Temperature(
        gpu=celsius(find("gpu_temp"), "temperature.gpu", missing),
        memory=None if memory is None else celsius(memory, "temperature.memory", missing),
        slowdown=celsius(find("gpu_temp_slow_threshold"), "temperature.slowdown", missing),
        shutdown=celsius(find("gpu_temp_max_threshold"), "temperature.shutdown", missing),
        max_operating=None
        if max_operating is None
        else celsius(max_operating, "temperature.max_operating", missing),
    ), tuple(missing)


_DRAW_TAGS = ("power_draw", "average_power_draw", "instant_power_draw")
_LIMIT_TAGS = ("enforced_power_limit", "current_power_limit", "power_limit")


def _first(parent: Element, tags: tuple[str, ...], path: str, missing: Missing) -> float | None:
    """The first of several alternative elements that holds a number.

    When none does, the reason noted is the preferred (first present) element's.
    """
    reason = None
    for tag in tags:
        node = parent.find(tag)
        if node is not None:
            value = watts_of[node.text]
            if value.__class__ is float:
                return value
            if reason is None:
                reason = value
    missing.append((path, _NOT_REPORTED if reason is None else reason))  # type: ignore[arg-type]
    return None


def _power(node: Element) -> Part:
    find = node.find
    missing: Missing = []
    return Power(
        draw=_first(node, _DRAW_TAGS, "power.draw", missing),
        limit=_first(node, _LIMIT_TAGS, "power.limit", missing),
        default_limit=watts(find("default_power_limit"), "power.default_limit", missing),
        min_limit=watts(find("min_power_limit"), "power.min_limit", missing),
        max_limit=watts(find("max_power_limit"), "power.max_limit", missing),
    ), tuple(missing)


def _clocks(prefix: str) -> Callable[[Element], Part]:
    paths = tuple(f"{prefix}.{name}" for name in ("graphics", "sm", "memory", "video"))

    def convert(node: Element) -> Part:
        find = node.find
        missing: Missing = []
        video = find("video_clock")
        return Clocks(
            graphics=megahertz(find("graphics_clock"), paths[0], missing),
            sm=megahertz(find("sm_clock"), paths[1], missing),
            memory=megahertz(find("mem_clock"), paths[2], missing),
            video=None if video is None else megahertz(video, paths[3], missing),
        ), tuple(missing)

    return convert


def _ecc_counts(node: Element | None) -> tuple[int | None, int | None]:
    """(corrected, uncorrected) from either the old single/double-bit or the sram/dram form."""
    if node is None:
        return None, None
    single = node.find("single_bit")
    if single is not None:
        double = node.find("double_bit")
        return count(single.findtext("total")), count(
            None if double is None else double.findtext("total")
        )
    corrected: int | None = None
    uncorrected: int | None = None
    for child in node:
        value = count(child.text)
        if value is None:
            continue
        if "uncorrectable" in child.tag:
            uncorrected = (uncorrected or 0) + value
        elif "correctable" in child.tag:
            corrected = (corrected or 0) + value
    return corrected, uncorrected


_NO_ECC: Part = (EccErrors(), (("ecc_errors", Reason.NOT_AVAILABLE),))


def _ecc(node: Element) -> Part:
    volatile = _ecc_counts(node.find("volatile"))
    aggregate = _ecc_counts(node.find("aggregate"))
    errors = EccErrors(volatile[0], volatile[1], aggregate[0], aggregate[1])
    return _NO_ECC if errors == _NO_ECC[0] else (errors, _NOTHING)


def _retired_count(node: Element | None) -> Element | None:
    """The XML's ``<retired_count>`` inside ``node``, or ``node`` itself: `-q` text prints
    the count as the section's own value."""
    if node is None:
        return None
    inner = node.find("retired_count")
    return node if inner is None else inner


def _retired_pages(node: Element) -> Part:
    """``<retired_pages>``: counts of pages retired after single- and double-bit errors."""
    find = node.find
    missing: Missing = []
    single = find("multiple_single_bit_retirement")
    double = find("double_bit_retirement")
    pending = find("pending_retirement")
    if pending is None:
        pending = find("pending_blacklist")
    pages = RetiredPages(
        single_bit=whole_count(
            _retired_count(single),
            "retired_pages.single_bit",
            missing,
        ),
        double_bit=whole_count(
            _retired_count(double),
            "retired_pages.double_bit",
            missing,
        ),
        pending=flag(pending, "retired_pages.pending", missing),
    )
    return pages, tuple(missing)


def _remapped_rows(node: Element) -> Part:
    """``<remapped_rows>``: rows remapped after errors, and whether one waits or failed."""
    find = node.find
    missing: Missing = []
    rows = RemappedRows(
        correctable=whole_count(find("remapped_row_corr"), "remapped_rows.correctable", missing),
        uncorrectable=whole_count(find("remapped_row_unc"), "remapped_rows.uncorrectable", missing),
        pending=flag(find("remapped_row_pending"), "remapped_rows.pending", missing),
        failure=flag(find("remapped_row_failure"), "remapped_rows.failure", missing),
    )
    return rows, tuple(missing)


_STATES = {"Active": "active", "Not Active": "not active"}


def _throttle(prefix: str) -> Callable[[Element], Part]:
    def convert(node: Element) -> Part:
        active: list[str] = []
        known = False
        for child in node:
            state = _STATES.get(child.text)  # type: ignore[arg-type]
            if state is None:
                state = (child.text or "").strip().lower()
            if state == "active":
                active.append(child.tag.removeprefix(prefix))
                known = True
            elif state == "not active":
                known = True
        if known:
            return tuple(active), _NOTHING
        # gputop's own XML of a log that had no such lines says `[Not In This Log]` in each.
        said = {(child.text or "").strip().lower() for child in node}
        why = Reason.NOT_IN_LOG if said == {"[not in this log]"} else Reason.NOT_AVAILABLE
        return None, (("throttle_reasons", why),)

    return convert


def _process(node: Element) -> ProcessSample | None:
    find = node.find
    pid = count(node.findtext("pid"))
    if pid is None:
        return None
    ignored: Missing = []
    return ProcessSample(
        pid=pid,
        type=text(find("type"), "type", ignored) or None,
        name=text(find("process_name"), "name", ignored) or None,
        memory_used=size(find("used_memory"), "memory_used", ignored),
        gpu_instance_id=count(node.findtext("gpu_instance_id")),
        compute_instance_id=count(node.findtext("compute_instance_id")),
    )


def _processes(node: Element) -> Part:
    found = (_process(child) for child in node.iterfind("process_info"))
    return tuple(process for process in found if process is not None), _NOTHING


def _as_is(node: Element) -> Part:
    """``<mig_devices>`` is converted with its GPU's name, memory and processes."""
    return node, _NOTHING


CONVERTERS: dict[str, Callable[[Element], Part]] = {
    "product_name": _part(text, "name"),
    "product_architecture": _part(text, "architecture"),
    "persistence_mode": _part(flag, "persistence_mode"),
    "mig_mode": _part(flag, "mig_mode", "current_mig"),
    "mig_devices": _as_is,
    "serial": _part(text, "serial"),
    "uuid": _part(text, "uuid"),
    "pci": _part(text, "pci_bus_id", "pci_bus_id"),
    "fan_speed": _part(fan_percent, "fan_speed"),
    "performance_state": _part(pstate, "performance_state"),
    "clocks_event_reasons": _throttle("clocks_event_reason_"),
    "clocks_throttle_reasons": _throttle("clocks_throttle_reason_"),
    "fb_memory_usage": _memory("memory"),
    "bar1_memory_usage": _memory("bar1"),
    "compute_mode": _part(text, "compute_mode"),
    "utilization": _utilization,
    "ecc_mode": _part(flag, "ecc_mode", "current_ecc"),
    "ecc_errors": _ecc,
    "retired_pages": _retired_pages,
    "remapped_rows": _remapped_rows,
    "temperature": _temperature,
    "gpu_power_readings": _power,
    "power_readings": _power,
    "clocks": _clocks("clocks"),
    "max_clocks": _clocks("max_clocks"),
    "processes": _processes,
}
"""The converter of each child of ``<gpu>`` that is read, by tag."""


def parts_of(children: Iterable[Element]) -> dict[str, Part]:
    """The part of each child that is read, the first of duplicates as ``find`` picks."""
    parts: dict[str, Part] = {}
    for child in children:
        convert = CONVERTERS.get(child.tag)
        if convert is not None and child.tag not in parts:
            parts[child.tag] = convert(child)
    return parts


def _absent(*paths: str) -> Part:
    return None, tuple((path, _NOT_REPORTED) for path in paths)


_ABSENT: dict[str, Part] = {
    "mig_mode": _absent("mig_mode"),
    "product_name": _absent("name"),
    "fb_memory_usage": (Memory(), _absent("memory.total", "memory.used", "memory.free")[1]),
    "utilization": (Utilization(), _absent(*(path for _, path in _UTILIZATION))[1]),
    "uuid": _absent("uuid"),
    "serial": _absent("serial"),
    "bar1_memory_usage": (Memory(), _absent("bar1.total", "bar1.used", "bar1.free")[1]),
    "temperature": (
        Temperature(),
        _absent("temperature.gpu", "temperature.slowdown", "temperature.shutdown")[1],
    ),
    "power": (
        Power(),
        _absent(
            "power.draw", "power.limit", "power.default_limit", "power.min_limit", "power.max_limit"
        )[1],
    ),
    "fan_speed": _absent("fan_speed"),
    "performance_state": _absent("performance_state"),
    "clocks": (Clocks(), _absent("clocks.graphics", "clocks.sm", "clocks.memory")[1]),
    "max_clocks": (
        Clocks(),
        _absent("max_clocks.graphics", "max_clocks.sm", "max_clocks.memory")[1],
    ),
    "persistence_mode": _absent("persistence_mode"),
    "compute_mode": _absent("compute_mode"),
    "ecc_errors": _NO_ECC,
    "retired_pages": (
        RetiredPages(),
        _absent("retired_pages.single_bit", "retired_pages.double_bit", "retired_pages.pending")[1],
    ),
    "remapped_rows": (
        RemappedRows(),
        _absent(
            "remapped_rows.correctable",
            "remapped_rows.uncorrectable",
            "remapped_rows.pending",
            "remapped_rows.failure",
        )[1],
    ),
    "throttle_reasons": _absent("throttle_reasons"),
}
_NONE: Part = (None, _NOTHING)
_NO_PROCESSES: Part = ((), _NOTHING)


def gpu_sample(index: int, gpu_id: str | None, parts: Mapping[str, Part]) -> GpuSample:
    """The GPU whose children that are read converted to ``parts``; ``gpu_id`` is the
    ``id`` attribute of ``<gpu>`` (its PCI address)."""
    get = parts.get
    absent = _ABSENT
    mig_mode, mig_missing = get("mig_mode") or absent["mig_mode"]
    name, name_missing = get("product_name") or absent["product_name"]
    memory, memory_missing = get("fb_memory_usage") or absent["fb_memory_usage"]
    utilization, utilization_missing = get("utilization") or absent["utilization"]
    if mig_mode and utilization_missing:
        # nvidia-smi prints N/A for utilization of a MIG-enabled GPU: it is not 0, and
        # not unsupported either: the driver cannot attribute it under MIG.
        utilization_missing = tuple((path, Reason.UNDER_MIG) for path, _ in utilization_missing)
    processes = (get("processes") or _NO_PROCESSES)[0]
    pci_bus_id, pci_missing = get("pci") or _NONE
    uuid, uuid_missing = get("uuid") or absent["uuid"]
    serial, serial_missing = get("serial") or absent["serial"]
    architecture, architecture_missing = get("product_architecture") or _NONE
    bar1, bar1_missing = get("bar1_memory_usage") or absent["bar1_memory_usage"]
    temperature, temperature_missing = get("temperature") or absent["temperature"]
    power, power_missing = get("gpu_power_readings") or get("power_readings") or absent["power"]
    fan_speed, fan_missing = get("fan_speed") or absent["fan_speed"]
    state, state_missing = get("performance_state") or absent["performance_state"]
    clocks, clocks_missing = get("clocks") or absent["clocks"]
    max_clocks, max_clocks_missing = get("max_clocks") or absent["max_clocks"]
    persistence, persistence_missing = get("persistence_mode") or absent["persistence_mode"]
    compute_mode, compute_missing = get("compute_mode") or absent["compute_mode"]
    ecc_mode, ecc_mode_missing = get("ecc_mode") or _NONE
    ecc_errors, ecc_missing = get("ecc_errors") or absent["ecc_errors"]
    retired, retired_missing = get("retired_pages") or absent["retired_pages"]
    remapped, remapped_missing = get("remapped_rows") or absent["remapped_rows"]
    throttle, throttle_missing = (
        get("clocks_event_reasons") or get("clocks_throttle_reasons") or absent["throttle_reasons"]
    )
    mig_devices: tuple[MigDeviceSample, ...] = ()
    if mig_mode:
        node = (get("mig_devices") or _NONE)[0]
        mig_devices = _mig_devices(node, name, memory.total, processes)
    return GpuSample(
        index=index,
        name=name,
        uuid=uuid,
        pci_bus_id=pci_bus_id or gpu_id,
        serial=serial,
        architecture=architecture,
        utilization=utilization,
        memory=memory,
        bar1=bar1,
        temperature=temperature,
        power=power,
        fan_speed=fan_speed,
        performance_state=state,
        clocks=clocks,
        max_clocks=max_clocks,
        persistence_mode=persistence,
        compute_mode=compute_mode,
        ecc_mode=ecc_mode,
        ecc_errors=ecc_errors,
        remapped_rows=remapped,
        retired_pages=retired,
        throttle_reasons=throttle,
        mig_mode=mig_mode,
        mig_devices=mig_devices,
        processes=processes,
        unavailable=mig_missing
        + name_missing
        + memory_missing
        + utilization_missing
        + pci_missing
        + uuid_missing
        + serial_missing
        + architecture_missing
        + bar1_missing
        + temperature_missing
        + power_missing
        + fan_missing
        + state_missing
        + clocks_missing
        + max_clocks_missing
        + persistence_missing
        + compute_missing
        + ecc_mode_missing
        + ecc_missing
        + retired_missing
        + remapped_missing
        + throttle_missing,
    )


_MEMORY_PATHS = ("memory.total", "memory.used", "memory.free", "memory.reserved")
_BAR1_PATHS = ("bar1.total", "bar1.used", "bar1.free", "bar1.reserved")


def _mig_memory(node: Element | None, paths: tuple[str, ...], missing: Missing) -> Memory:
    if node is None:
        for path in paths[:3]:
            missing.append((path, _NOT_REPORTED))
        return Memory()
    return _memory_of(node, paths, missing)


def _mig_devices(
    node: Element | None,
    gpu_name: str | None,
    gpu_memory_total: int | None,
    processes: tuple[ProcessSample, ...],
) -> tuple[MigDeviceSample, ...]:
    if node is None:
        return ()
    devices: list[MigDeviceSample] = []
    for item in node.iterfind("mig_device"):
        missing: Missing = []
        gi = count(item.findtext("gpu_instance_id"))
        ci = count(item.findtext("compute_instance_id"))
        attributes = item.find("device_attributes/shared")
        sm_count = whole_count(
            None if attributes is None else attributes.find("multiprocessor_count"),
            "sm_count",
            missing,
        )
        memory = _mig_memory(item.find("fb_memory_usage"), _MEMORY_PATHS, missing)
        profile = derive_profile(gpu_name, gpu_memory_total, sm_count, memory.total)
        for path in ("utilization.gpu", "utilization.memory"):
            missing.append((path, Reason.UNDER_MIG))
        devices.append(
            MigDeviceSample(
                index=count(item.findtext("index")),
                gpu_instance_id=gi,
                compute_instance_id=ci,
                profile=profile,
                profile_derived=profile is not None,
                sm_count=sm_count,
                memory=memory,
                bar1=_mig_memory(item.find("bar1_memory_usage"), _BAR1_PATHS, missing),
                processes=tuple(
                    p
                    for p in processes
                    if p.gpu_instance_id == gi
                    and (p.compute_instance_id is None or p.compute_instance_id == ci)
                ),
                unavailable=tuple(missing),
            )
        )
    return tuple(devices)
