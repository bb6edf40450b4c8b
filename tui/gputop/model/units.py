"""Formatting of model values for people. The only place that spells "n/a"."""

from __future__ import annotations

NA = "n/a"

_MIB = 1024 * 1024
_GIB = 1024 * _MIB


def fmt_bytes(value: int | None) -> str:
    """Memory as nvidia-smi users read it: MiB below 10 GiB, GiB with one decimal above."""
    if value is None:
        return NA
    if value >= 10 * _GIB:
        return f"{value / _GIB:.1f}GiB"
    return f"{value // _MIB}MiB"


def fmt_mib(value: int | None) -> str:
    """Bytes shown as whole MiB, the unit nvidia-smi prints."""
    return NA if value is None else f"{value // _MIB}MiB"


def fmt_percent(value: float | None) -> str:
    """A percentage without decimals."""
    return NA if value is None else f"{value:.0f}%"


def fmt_watts(value: float | None) -> str:
    """Watts without decimals."""
    return NA if value is None else f"{value:.0f}W"


def fmt_celsius(value: float | None) -> str:
    """Degrees Celsius without decimals."""
    return NA if value is None else f"{value:.0f}C"


def fmt_mhz(value: int | None) -> str:
    """A clock in MHz."""
    return NA if value is None else f"{value}MHz"


def fmt_text(value: str | None) -> str:
    """Any reported text, or n/a."""
    return NA if value is None or value == "" else value


def ratio(used: float | None, total: float | None) -> float | None:
    """used/total as a fraction in [0, 1], or None when either is unknown or total is 0."""
    if used is None or total is None or total <= 0:
        return None
    return min(max(used / total, 0.0), 1.0)
