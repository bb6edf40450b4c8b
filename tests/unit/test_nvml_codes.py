"""NVML numbers to smi XML words."""

from __future__ import annotations

import pytest

from gputop.model import ThrottleReason
from gputop.sources.nvml.codes import (
    cuda_version,
    instance_id,
    performance_state,
    text,
    throttle_names,
)


def test_throttle_bits_are_distinct_and_in_nvidia_smi_order() -> None:
    bits = [reason.bit for reason in ThrottleReason]
    assert len(set(bits)) == len(bits)
    assert all(bit & (bit - 1) == 0 for bit in bits)
    # hw_thermal (0x40) prints before sync_boost (0x10), as nvidia-smi lists them.
    assert throttle_names(0x40 | 0x10 | 0x1) == ("gpu_idle", "hw_thermal_slowdown", "sync_boost")


def test_unknown_bits_are_ignored() -> None:
    assert throttle_names(0x200 | 0x4) == ("sw_power_cap",)
    assert throttle_names(0) == ()


@pytest.mark.parametrize(("value", "name"), [(0, "P0"), (8, "P8"), (15, "P15"), (32, None)])
def test_performance_state(value: int, name: str | None) -> None:
    assert performance_state(value) == name


@pytest.mark.parametrize(
    ("value", "version"), [(12020, "12.2"), (13010, "13.1"), (10010, "10.1"), (0, None)]
)
def test_cuda_version(value: int, version: str | None) -> None:
    assert cuda_version(value) == version


def test_instance_ids_outside_mig_are_none() -> None:
    assert instance_id(0xFFFFFFFF) is None
    assert instance_id(None) is None
    assert instance_id(0) == 0


def test_text() -> None:
    assert text(b"Tesla T4") == "Tesla T4"
    assert text(" x ") == "x"
    assert text("") is None
    assert text(None) is None
