"""Throttle reasons are one enum with a kind; every place that lists or classifies them uses it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputop.insight.diagnosis import (
    power_reasons,
    slowdown_reasons,
    thermal_reasons,
)
from gputop.model import GpuSample, Power, ThrottleKind, ThrottleReason, Utilization
from gputop.sinks.smi_xml import CLOCK_EVENT_REASONS
from gputop.sources.nvml.codes import throttle_names
from gputop.ui.render.gauges import Level, power_level, throttle_level
from support.shortcuts import limiting_reasons

KINDS = {
    "gpu_idle": ThrottleKind.BENIGN,
    "applications_clocks_setting": ThrottleKind.BENIGN,
    "sw_power_cap": ThrottleKind.POWER,
    "hw_slowdown": ThrottleKind.HARDWARE,
    "hw_thermal_slowdown": ThrottleKind.THERMAL,
    "hw_power_brake_slowdown": ThrottleKind.POWER,
    "sync_boost": ThrottleKind.BENIGN,
    "sw_thermal_slowdown": ThrottleKind.THERMAL,
    "display_clocks_setting": ThrottleKind.BENIGN,
    "unknown": ThrottleKind.UNKNOWN,
}


def test_each_reason_has_its_kind_in_nvidia_smi_order() -> None:
    assert {reason.value: reason.kind for reason in ThrottleReason} == KINDS
    assert [reason.value for reason in ThrottleReason] == list(KINDS)


def test_the_writer_and_the_nvml_source_list_the_enum() -> None:
    assert tuple(KINDS)[:-1] == CLOCK_EVENT_REASONS
    every = sum(reason.bit for reason in ThrottleReason)
    assert throttle_names(every) == tuple(KINDS)


@pytest.mark.parametrize("reason", list(ThrottleReason))
@pytest.mark.parametrize("spell", [str, lambda name: name.replace("_", " ").title()])
def test_gauges_and_diagnosis_classify_by_kind(reason: ThrottleReason, spell: object) -> None:
    assert callable(spell)
    name = spell(reason.value)
    kind = reason.kind
    assert thermal_reasons([name]) == ((name,) if kind is ThrottleKind.THERMAL else ())
    assert power_reasons([name]) == ((name,) if kind is ThrottleKind.POWER else ())
    assert slowdown_reasons([name]) == ((name,) if kind is ThrottleKind.HARDWARE else ())
    limiting = kind in (ThrottleKind.POWER, ThrottleKind.THERMAL, ThrottleKind.HARDWARE)
    assert limiting_reasons([name]) == ((name,) if limiting else ())
    severe = kind is ThrottleKind.THERMAL or reason.value.startswith("hw_")
    # At full load the power cap is how the GPU runs (information); at low utilization with
    # the draw at the limit it holds the GPU back (a warning).
    busy = GpuSample(
        index=0,
        utilization=Utilization(gpu=97.0),
        power=Power(draw=690.0, limit=700.0),
        throttle_reasons=(name,),
    )
    held_back = replace(busy, utilization=Utilization(gpu=3.0))
    for gpu, cap in ((busy, Level.OK), (held_back, Level.WARN)):
        expected = (
            Level.CRIT
            if severe
            else Level.OK
            if kind is ThrottleKind.BENIGN
            else cap
            if reason is ThrottleReason.SW_POWER_CAP
            else Level.WARN
        )
        assert throttle_level([name], gpu) is expected
        brake = reason is ThrottleReason.HW_POWER_BRAKE_SLOWDOWN
        power = Level.CRIT if brake else cap if reason is ThrottleReason.SW_POWER_CAP else Level.OK
        assert power_level(gpu) is power


def test_a_name_nvidia_smi_does_not_have_warns_and_limits_nothing() -> None:
    assert ThrottleReason.parse("clocks_new_reason") is None
    assert throttle_level(["clocks_new_reason"], GpuSample(index=0)) is Level.WARN
    assert limiting_reasons(["clocks_new_reason"]) == ()
