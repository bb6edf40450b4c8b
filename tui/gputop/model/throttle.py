"""Clock-event (throttle) reasons: each once, with its NVML bit and what kind of limit it is.

The model keeps the reasons a GPU reports as their names (``GpuSample.throttle_reasons``), the
suffixes of nvidia-smi's ``clocks_event_reason_<name>`` elements, so that a recording with a
reason this table does not know still replays and writes back unchanged. Everything that lists
reasons (the NVML source, the smi XML writer) or classifies them (the gauges, the diagnosis)
does it through :class:`ThrottleReason`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from functools import lru_cache


class ThrottleKind(enum.Enum):
    """What a reason says about the clocks."""

    BENIGN = "benign"
    """Normal operation or a choice (idle, application clocks, sync boost): not a limit."""
    POWER = "power"
    """The power limit, or the power supply, holds the clocks back."""
    THERMAL = "thermal"
    """Heat holds the clocks back."""
    HARDWARE = "hardware"
    """A hardware slowdown not explained by heat or power."""
    UNKNOWN = "unknown"
    """The driver says a reason it does not name is active."""


class ThrottleReason(enum.Enum):
    """Each clock-event reason, in the order nvidia-smi prints them; the value is its name."""

    GPU_IDLE = "gpu_idle"
    APPLICATIONS_CLOCKS_SETTING = "applications_clocks_setting"
    SW_POWER_CAP = "sw_power_cap"
    HW_SLOWDOWN = "hw_slowdown"
    HW_THERMAL_SLOWDOWN = "hw_thermal_slowdown"
    HW_POWER_BRAKE_SLOWDOWN = "hw_power_brake_slowdown"
    SYNC_BOOST = "sync_boost"
    SW_THERMAL_SLOWDOWN = "sw_thermal_slowdown"
    DISPLAY_CLOCKS_SETTING = "display_clocks_setting"
    UNKNOWN = "unknown"

    @property
    def bit(self) -> int:
        """The reason's bit in NVML's ``nvmlClocksEventReasons`` mask (``nvml.h``)."""
        return _BITS[self]

    @property
    def kind(self) -> ThrottleKind:
        """What kind of limit it is."""
        return _KINDS[self]

    @property
    def hardware(self) -> bool:
        """Signalled by the hardware (``hw_…``): the board, not a setting, slows the GPU."""
        return self.value.startswith("hw_")

    @property
    def severe(self) -> bool:
        """Overheating or a failing power supply, not just a limit being reached."""
        return self.kind is ThrottleKind.THERMAL or self.hardware

    @classmethod
    def parse(cls, name: str) -> ThrottleReason | None:
        """The reason a name stands for, however a source spelled it (``"HW Slowdown"``,
        ``"hw-slowdown"``); None for a name nvidia-smi does not have."""
        return _BY_NAME.get(name.strip().lower().replace(" ", "_").replace("-", "_"))


_BITS: dict[ThrottleReason, int] = {
    ThrottleReason.GPU_IDLE: 0x1,
    ThrottleReason.APPLICATIONS_CLOCKS_SETTING: 0x2,
    ThrottleReason.SW_POWER_CAP: 0x4,
    ThrottleReason.HW_SLOWDOWN: 0x8,
    ThrottleReason.HW_THERMAL_SLOWDOWN: 0x40,
    ThrottleReason.HW_POWER_BRAKE_SLOWDOWN: 0x80,
    ThrottleReason.SYNC_BOOST: 0x10,
    ThrottleReason.SW_THERMAL_SLOWDOWN: 0x20,
    ThrottleReason.DISPLAY_CLOCKS_SETTING: 0x100,
    ThrottleReason.UNKNOWN: 0x8000000000000000,
}
_KINDS: dict[ThrottleReason, ThrottleKind] = {
    ThrottleReason.GPU_IDLE: ThrottleKind.BENIGN,
    ThrottleReason.APPLICATIONS_CLOCKS_SETTING: ThrottleKind.BENIGN,
    ThrottleReason.SW_POWER_CAP: ThrottleKind.POWER,
    ThrottleReason.HW_SLOWDOWN: ThrottleKind.HARDWARE,
    ThrottleReason.HW_THERMAL_SLOWDOWN: ThrottleKind.THERMAL,
    ThrottleReason.HW_POWER_BRAKE_SLOWDOWN: ThrottleKind.POWER,
    ThrottleReason.SYNC_BOOST: ThrottleKind.BENIGN,
    ThrottleReason.SW_THERMAL_SLOWDOWN: ThrottleKind.THERMAL,
    ThrottleReason.DISPLAY_CLOCKS_SETTING: ThrottleKind.BENIGN,
    ThrottleReason.UNKNOWN: ThrottleKind.UNKNOWN,
}
_BY_NAME: dict[str, ThrottleReason] = {reason.value: reason for reason in ThrottleReason}


@lru_cache(maxsize=256)
def throttle_names(mask: int) -> tuple[str, ...]:
    """The active reasons in an NVML mask, in nvidia-smi's order; unknown bits are ignored.

    Worked out once per mask: a GPU reports the same few masks tick after tick, and the
    one tuple each gets is then what the diagnosis's classification of it is keyed by.
    """
    return tuple(reason.value for reason in ThrottleReason if mask & reason.bit)


def reasons_of_kind(names: Iterable[str] | None, *kinds: ThrottleKind) -> tuple[str, ...]:
    """The names among ``names`` whose reason is of one of ``kinds``, in their order."""
    if not names:
        return ()
    if type(names) is tuple:
        # A GPU reports the same few combinations sample after sample, and the diagnosis
        # asks again for every sample of a long-running cap on every tick.
        return _of_kinds(names, kinds)
    return _of_kinds.__wrapped__(names, kinds)


@lru_cache(maxsize=512)
def _of_kinds(names: Iterable[str], kinds: tuple[ThrottleKind, ...]) -> tuple[str, ...]:
    found = []
    for name in names:
        reason = ThrottleReason.parse(name)
        if reason is not None and reason.kind in kinds:
            found.append(name)
    return tuple(found)
