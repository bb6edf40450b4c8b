"""The Prometheus alert rules `gputop alert-rules` prints: GPU health over gputop's and
dcgm-exporter's series.

One rule per condition, each labelled with a ``severity`` and annotated with a ``summary``,
a ``description`` naming the host, the GPU (index and UUID) and the pod holding it where the
series say one, and a ``runbook``: what to do. Critical XIDs are one rule per class of
fault (bus, memory, NVLink, firmware, ...), their codes taken from the XID table
(:mod:`gputop.model.health`, NVIDIA's catalogue), so each alert says its class's action.

The same condition is read from either exporter:

* XIDs: gputop's ``gputop_xid_errors_total{xid}`` counts every XID; a series that appeared
  or grew within ``xid_window`` fires. dcgm-exporter has only the last code
  (``DCGM_FI_DEV_XID_ERRORS``): a value of the class that was not there ``xid_window`` ago
  fires (a repeat of the same code is invisible in that gauge). gputop exports the gauge
  too; its targets are left out of the gauge's half (``unless on(instance, gpu)
  gputop_gpu_lost``, a series every gputop GPU has), so one XID is one alert.
* ECC, row remapping, page retirement: the same ``DCGM_FI_DEV_*`` names from both.
* slowdowns: ``gputop_throttle_reason{reason}``, and dcgm-exporter's
  ``DCGM_EXP_CLOCK_EVENTS_COUNT{clock_event}`` on its own targets.
* a GPU held and unused: ``DCGM_FI_DEV_GPU_UTIL`` at or under ``idle_utilization`` % with
  processes on it (gputop) or a pod label (both), or dcgm-exporter's
  ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` under ``idle_activity``, for ``idle_for``. The defaults
  are those of Princeton's jobstats (0 % GPU utilization for an hour flags a job) and of
  gpu-pruner (a pod whose GPU engine activity stays under 0.01 is idle).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gputop.model.health import XIDS, Action, Severity

HOST = "{{ $labels.Hostname }}{{ $labels.hostname }}"
"""The host, under either spelling of dcgm-exporter's label (one of the two is empty)."""
GPU = "GPU {{ $labels.gpu }} ({{ $labels.UUID }})"
POD = "{{ if $labels.pod }} held by pod {{ $labels.namespace }}/{{ $labels.pod }}{{ end }}"
WHERE = f"{GPU} on {HOST}{POD}"
CODE = "{{ $labels.xid }}{{ $labels.err_code }}"
"""The XID code: gputop's counter names it ``xid``, dcgm-exporter's gauge ``err_code``."""

CATALOGUE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
GPUTOP_TARGET = "gputop_gpu_lost"
"""A series every GPU that gputop exports has: what tells gputop's targets apart."""

_DURATION = re.compile(r"[0-9]+(ms|s|m|h|d|w|y)")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What the rules compare with; each a flag of `gputop alert-rules`."""

    xid_window: str = "10m"
    """How long an XID keeps its alert firing after it came."""
    slowdown_for: str = "5m"
    """How long a thermal or hardware slowdown lasts before it alerts."""
    idle_for: str = "1h"
    """How long a held GPU sits unused before it alerts (jobstats: an hour)."""
    idle_utilization: float = 0.0
    """GPU utilization (%) at or under which a held GPU is unused (jobstats: 0 %)."""
    idle_activity: float = 0.01
    """Graphics-engine activity (0-1) under which a pod's GPU is unused (gpu-pruner: 0.01)."""
    down_for: str = "5m"
    """How long an exporter is down or stale before it alerts."""
    job: str = ".*(gputop|dcgm).*"
    """The scrape jobs (a regular expression) whose ``up`` says an exporter is down."""
    interval: str | None = None
    """The rule group's evaluation interval; None: Prometheus's global one."""


def valid_duration(text: str) -> bool:
    """Whether ``text`` is a Prometheus duration (``90s``, ``5m``, ``1h30m``)."""
    return bool(text) and _DURATION.sub("", text) == "" and text[0].isdigit()


def _rule(
    name: str,
    expr: str,
    severity: Severity,
    summary: str,
    description: str,
    runbook: str,
    *,
    wait: str | None = None,
) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if wait is not None:
        rule["for"] = wait
    rule["labels"] = {"severity": severity.value}
    rule["annotations"] = {"summary": summary, "description": description, "runbook": runbook}
    return rule


_CLASS_NAMES = {
    "bus": ("Bus", "fell off the bus"),
    "memory": ("Memory", "memory error"),
    "nvlink": ("Nvlink", "NVLink error"),
    "firmware": ("Firmware", "firmware (GSP, micro-controller) error"),
    "hardware": ("Hardware", "hardware error"),
    "driver": ("Driver", "driver error"),
}


def critical_xid_classes() -> dict[str, tuple[int, ...]]:
    """Each class of critical XID and its codes, from the XID table."""
    classes: dict[str, list[int]] = {}
    for code, xid in sorted(XIDS.items()):
        if xid.severity is Severity.CRITICAL:
            classes.setdefault(xid.group, []).append(code)
    return {group: tuple(codes) for group, codes in classes.items()}


def _xid_expr(codes: tuple[int, ...], window: str) -> str:
    pattern = "|".join(str(code) for code in codes)
    counter = f'gputop_xid_errors_total{{xid=~"{pattern}"}}'
    gauge = "DCGM_FI_DEV_XID_ERRORS"
    in_class = " or ".join(f"{gauge} == {code}" for code in codes)
    return (
        f"(increase({counter}[{window}]) > 0)\n"
        f"or ({counter} unless {counter} offset {window})\n"
        f"or ((({in_class}) unless ({gauge} == {gauge} offset {window}))\n"
        f"    unless on(instance, gpu) {GPUTOP_TARGET})"
    )


def _xid_rules(t: Thresholds) -> list[dict[str, Any]]:
    rules = []
    for group, codes in critical_xid_classes().items():
        title, words = _CLASS_NAMES.get(group, (group.title(), f"{group} error"))
        actions = sorted({XIDS[code].action for code in codes}, key=lambda a: a.name)
        named = "; ".join(f"{code} {XIDS[code].description}" for code in codes)
        rules.append(
            _rule(
                f"GpuXid{title}",
                _xid_expr(codes, t.xid_window),
                Severity.CRITICAL,
                f"Critical XID {CODE} ({words}) on {WHERE}",
                f"{WHERE} reported a critical XID {CODE}"
                f" {{{{ $labels.err_msg }}}} within the last {t.xid_window} "
                f"(codes of this class: {', '.join(map(str, codes))}).",
                "; ".join(action.value for action in actions)
                + f" (by code: {named}; NVIDIA's Xid catalogue: {CATALOGUE})",
            )
        )
    return rules


def build_rules(t: Thresholds) -> dict[str, Any]:
    """The rule file, as the dict its YAML is written from."""
    rules = [
        *_xid_rules(t),
        *_memory_rules(),
        *_slowdown_rules(t),
        *_exporter_rules(t),
        _idle_rule(t),
    ]
    group: dict[str, Any] = {"name": "gputop-gpu-health"}
    if t.interval is not None:
        group["interval"] = t.interval
    group["rules"] = rules
    return {"groups": [group]}


def _memory_rules() -> list[dict[str, Any]]:
    """ECC errors, row remapping and page retirement: the GPU's memory going bad."""
    return [
        _rule(
            "GpuUncorrectableEccErrors",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0",
            Severity.CRITICAL,
            f"Uncorrectable ECC errors on {WHERE}",
            f"{WHERE} has had {{{{ $value }}}} uncorrectable (double-bit) ECC errors since "
            "the driver loaded; its memory holds data it could not correct.",
            Action.RESET_GPU.value + "; if it recurs after the reset, contact support (RMA)",
        ),
        _rule(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            Severity.CRITICAL,
            f"Row remapping failed on {WHERE}",
            f"{WHERE} could not remap a memory row: it has no spare row where it needed one.",
            Action.CONTACT_SUPPORT.value,
        ),
        _rule(
            "GpuRowRemapPending",
            "DCGM_FI_DEV_ROW_REMAP_PENDING > 0",
            Severity.WARNING,
            f"Row remap pending on {WHERE}",
            f"{WHERE} remapped a memory row that takes effect at its next reset.",
            "drain the GPU and reset it (nvidia-smi -r) to apply the remap",
        ),
        _rule(
            "GpuRetiredPagesPending",
            "DCGM_FI_DEV_RETIRED_PENDING > 0",
            Severity.WARNING,
            f"Page retirement pending on {WHERE}",
            f"{WHERE} retired a memory page that takes effect at the next driver reload.",
            "drain the GPU and reset it (or reload the driver) to apply the retirement",
        ),
    ]


def _slowdown_rules(t: Thresholds) -> list[dict[str, Any]]:
    """A GPU lost, or slowed down for heat or by the hardware."""
    thermal = "hw_thermal_slowdown|sw_thermal_slowdown"
    hardware = "hw_slowdown|hw_power_brake_slowdown"
    return [
        _rule(
            "GpuLost",
            f"{GPUTOP_TARGET} > 0",
            Severity.CRITICAL,
            f"{GPU} on {HOST} is lost",
            f"{WHERE} stopped answering NVML (fell off the bus, or hung).",
            Action.RESTART_BM.value,
        ),
        _rule(
            "GpuThermalSlowdown",
            f'(gputop_throttle_reason{{reason=~"{thermal}"}} > 0)\n'
            f'or ((DCGM_EXP_CLOCK_EVENTS_COUNT{{clock_event=~"hw_thermal|sw_thermal"}} > 0)\n'
            f"    unless on(instance, gpu) {GPUTOP_TARGET})",
            Severity.WARNING,
            f"Thermal slowdown on {WHERE}",
            f"{WHERE} has been slowed down for heat ({{{{ $labels.reason }}}}"
            f"{{{{ $labels.clock_event }}}}) for {t.slowdown_for} or more.",
            Action.CHECK_MECHANICALS.value,
            wait=t.slowdown_for,
        ),
        _rule(
            "GpuHardwareSlowdown",
            f'(gputop_throttle_reason{{reason=~"{hardware}"}} > 0)\n'
            f'or ((DCGM_EXP_CLOCK_EVENTS_COUNT{{clock_event=~"hw_slowdown|hw_power_brake"}} > 0)'
            f"\n    unless on(instance, gpu) {GPUTOP_TARGET})",
            Severity.WARNING,
            f"Hardware slowdown on {WHERE}",
            f"{WHERE} has been held down by a hardware slowdown ({{{{ $labels.reason }}}}"
            f"{{{{ $labels.clock_event }}}}: power brake, power supply, or an external signal) "
            f"for {t.slowdown_for} or more.",
            "check the power supply and the board's external slowdown signal; "
            + Action.CHECK_MECHANICALS.value,
            wait=t.slowdown_for,
        ),
    ]


def _exporter_rules(t: Thresholds) -> list[dict[str, Any]]:
    """The exporter down, or serving stale samples: the GPUs' health unknown."""
    return [
        _rule(
            "GpuExporterDown",
            f'up{{job=~"{t.job}"}} == 0',
            Severity.WARNING,
            "GPU exporter {{ $labels.instance }} is down",
            "Prometheus cannot scrape {{ $labels.instance }} (job {{ $labels.job }}) for "
            f"{t.down_for}: none of its GPUs' health is known.",
            "check that gputop export (or dcgm-exporter) runs on the node and that its port "
            "is reachable from Prometheus",
            wait=t.down_for,
        ),
        _rule(
            "GpuExporterStale",
            "gputop_stale > 0",
            Severity.WARNING,
            f"GPU exporter on {HOST} serves stale samples",
            f"gputop export on {HOST} ({{{{ $labels.instance }}}}) has had no new sample for "
            f"{t.down_for}: an NVML call hangs (a GPU going bad, or the driver).",
            "look for a hung nvidia-smi or driver call on the node (dmesg for XIDs); "
            "drain the node and reboot it if NVML stays hung",
            wait=t.down_for,
        ),
    ]


def _idle_rule(t: Thresholds) -> dict[str, Any]:
    """A GPU held by a job that does not use it."""
    idle_util = _number(t.idle_utilization)
    idle_activity = _number(t.idle_activity)
    return _rule(
        "GpuHeldButIdle",
        f"(DCGM_FI_DEV_GPU_UTIL <= {idle_util}\n"
        f"    and on(instance, gpu) (gputop_processes > 0))\n"
        f'or (DCGM_FI_DEV_GPU_UTIL{{pod!=""}} <= {idle_util})\n'
        f'or (DCGM_FI_PROF_GR_ENGINE_ACTIVE{{pod!=""}} < {idle_activity})',
        Severity.WARNING,
        f"{GPU} on {HOST} is held but unused",
        f"{WHERE} has been held for {t.idle_for} at {idle_util} % utilization or less "
        f"(or graphics activity under {idle_activity}): a job that holds a GPU it does "
        "not use.",
        "ask the job's owner (the pod, or the processes on the GPU) to release the GPU; "
        "thresholds from Princeton's jobstats (0 % for 1 h) and gpu-pruner (activity "
        "under 0.01)",
        wait=t.idle_for,
    )


def _number(value: float) -> str:
    return f"{value:g}"


def rules_yaml(t: Thresholds) -> str:
    """The rule file as YAML, multi-line expressions as literal blocks."""
    # Deferred: PyYAML (30 ms, 24 modules), only to print the rule file.
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    header = (
        "# GPU health alerts for gputop export and dcgm-exporter, from `gputop alert-rules`.\n"
        "# Load: add this file under rule_files: in prometheus.yml, then `promtool check "
        "rules` it.\n"
    )
    body: str = yaml.dump(
        build_rules(t), Dumper=_Dumper, sort_keys=False, width=10_000, allow_unicode=True
    )
    return header + body
