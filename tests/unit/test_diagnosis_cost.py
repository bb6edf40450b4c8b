"""The diagnosis runs on every tick for every GPU, over the whole window: a condition that
lasts (a GPU at its power cap for hours, as most busy boards are) must not cost a reading of
every sample's throttle reasons on every tick."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from gputop.insight.diagnosis import FindingKind, diagnose
from gputop.model import GpuSample, Power, Snapshot, ThrottleReason, Utilization
from gputop.model import throttle as throttle_module

T0 = datetime(2024, 5, 1, 14, 0, 0)
WINDOW = 45


def capped(at: int, reasons: tuple[str, ...]) -> Snapshot:
    gpu = GpuSample(
        index=0,
        uuid="GPU-0",
        utilization=Utilization(gpu=97.0),
        power=Power(draw=398.0, limit=400.0),
        # A tuple of its own per sample, as every NVML sample builds one.
        throttle_reasons=tuple(reasons),
    )
    return Snapshot(timestamp=T0 + timedelta(seconds=at), gpus=(gpu,))


def parses(
    monkeypatch: pytest.MonkeyPatch, samples: int, reasons: tuple[str, ...]
) -> tuple[int, str]:
    """How many reason names the diagnosis of ``samples`` capped samples read, and the
    text of its power finding."""
    window = [capped(at, reasons) for at in range(samples)]
    parsed: list[str] = []
    parse = ThrottleReason.parse

    def counting(name: str) -> ThrottleReason | None:
        parsed.append(name)
        return parse(name)

    with monkeypatch.context() as patch:
        patch.setattr(ThrottleReason, "parse", staticmethod(counting))
        found = diagnose(window, 0)
    (power,) = [f for f in found if f.kind is FindingKind.POWER]
    return len(parsed), power.text


def test_a_lasting_power_cap_reads_each_combination_of_reasons_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Combinations no other test uses: nothing is known of them yet.
    short, short_text = parses(monkeypatch, 15, ("applications_clocks_setting", "sw_power_cap"))
    long, long_text = parses(monkeypatch, WINDOW, ("sw_power_cap", "applications_clocks_setting"))
    assert short_text == long_text == "busy at the 400W power cap since 14:00:00 (drawing 398W)"
    # The same few readings whether the cap lasted 15 samples or the whole window.
    assert 0 < long == short


def test_reasons_of_a_kind_are_the_same_from_a_list_a_tuple_and_the_cache() -> None:
    names = ("gpu_idle", "sw_power_cap", "hw_thermal_slowdown", "not_a_reason")
    kinds = (throttle_module.ThrottleKind.POWER, throttle_module.ThrottleKind.THERMAL)
    first = throttle_module.reasons_of_kind(names, *kinds)
    assert first == ("sw_power_cap", "hw_thermal_slowdown")
    assert throttle_module.reasons_of_kind(names, *kinds) == first
    assert throttle_module.reasons_of_kind(list(names), *kinds) == first
    assert throttle_module.reasons_of_kind(iter(names), *kinds) == first
    assert throttle_module.reasons_of_kind(None, *kinds) == ()


def test_a_mask_read_again_gives_the_same_names_once_worked_out() -> None:
    mask = ThrottleReason.SW_POWER_CAP.bit | ThrottleReason.GPU_IDLE.bit | 0x10000
    first = throttle_module.throttle_names(mask)
    assert first == ("gpu_idle", "sw_power_cap")
    # The same tuple, not a new one built from every reason's bit on every tick.
    assert throttle_module.throttle_names(mask) is first
    assert throttle_module.throttle_names(0) == ()
