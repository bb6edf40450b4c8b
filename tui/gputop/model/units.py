"""Formatting of model values for people. The only place that spells "n/a"."""

from __future__ import annotations

from gputop.model.safe_text import terminal_safe

NA = "n/a"

_MIB = 1024 * 1024
_GIB = 1024 * _MIB


def fmt_bytes(value: int | None) -> str:
    """Memory as nvidia-smi users read it: MiB below 10 GiB, GiB with one decimal above.

    An amount above zero never reads as zero: under a MiB it is "<1MiB".
    """
    if value is None:
        return NA
    if value >= 10 * _GIB:
        return f"{value / _GIB:.1f}GiB"
    if 0 < value < _MIB:
        return "<1MiB"
    return f"{value // _MIB}MiB"


def fmt_used_of(used: int, total: int, *, short: bool = False) -> str:
    """``used/total`` in one unit, the unit once: ``18.30/23.99GiB``, ``512/4096MiB``.

    GiB with two decimals from a GiB up, so a 24564 MiB card reads 23.99GiB as nvitop
    and nvtop show it, not 24.0 (from 100 GiB one decimal, where it changes nothing).
    A used amount too small to show in GiB puts the whole pair in MiB (``4/24564MiB``)
    rather than read 0.00, and under a MiB it reads "<1". ``short`` spells the unit G or M.
    """
    gib = total >= _GIB
    decimals = 1 if total >= 100 * _GIB else 2
    if gib and (used == 0 or round(used / _GIB, decimals) > 0):
        unit = "G" if short else "GiB"
        return f"{used / _GIB:.{decimals}f}/{total / _GIB:.{decimals}f}{unit}"
    unit = "M" if short else "MiB"
    shown = "<1" if 0 < used < _MIB else str(used // _MIB)
    return f"{shown}/{total // _MIB}{unit}"


def fmt_memory_pair(used: int | None, total: int | None, *, separator: str = " / ") -> str:
    """``used/total`` in one unit where both are known (``fmt_used_of``); else each amount
    on its own, ``n/a`` for the unknown one, joined by ``separator``; one ``n/a`` when
    neither is known (``n/a/n/a`` says nothing more)."""
    if used is not None and total is not None:
        return fmt_used_of(used, total)
    if used is None and total is None:
        return NA
    return f"{fmt_bytes(used)}{separator}{fmt_bytes(total)}"


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
    """Any reported text, terminal-safe (``safe_text``), or n/a."""
    return NA if value is None or value == "" else terminal_safe(value)


def ratio(used: float | None, total: float | None) -> float | None:
    """used/total as a fraction in [0, 1], or None when either is unknown or total is 0."""
    if used is None or total is None or total <= 0:
        return None
    return min(max(used / total, 0.0), 1.0)


def fmt_count(count: int, noun: str, plural: str | None = None) -> str:
    """``1 snapshot``, ``2 snapshots``: a count with its noun in the right number
    (``plural`` where adding an s does not make it: ``process``, ``processes``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


_RATE_UNITS = ("B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s")


def fmt_rate(value: float | None) -> str:
    """Bytes per second in binary units, one decimal below 10: ``2.3MiB/s``, ``620KiB/s``."""
    if value is None:
        return NA
    amount = max(float(value), 0.0)
    unit = 0
    while amount >= 1024 and unit < len(_RATE_UNITS) - 1:
        amount /= 1024
        unit += 1
    text = f"{amount:.1f}" if unit and amount < 10 else f"{amount:.0f}"
    return f"{text}{_RATE_UNITS[unit]}"
