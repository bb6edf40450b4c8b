"""The ledger written out: a table with its top offenders, CSV, JSON, a daily chart.

Group names come from labels (pods, namespaces, hosts): every text output writes them
through ``terminal_safe``; JSON keeps the true strings.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Any

from gputop.ledger.account import GroupHours, Ledger, Stretch
from gputop.ledger.thresholds import Thresholds
from gputop.model.safe_text import terminal_safe
from gputop.plotext_compat import new_figure

TOP = 10
"""Offenders listed under the table."""


def fmt_hours(value: float) -> str:
    """GPU-hours with a precision that suits their size."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_span(seconds: float) -> str:
    """``9 h 40 min``, ``2 d 3 h``, ``25 min``."""
    minutes = round(seconds / 60)
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


def _when(ledger: Ledger, at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=ledger.tz)


def stretch_text(ledger: Ledger, stretch: Stretch) -> str:
    """``held 2 GPUs idle for 9 h 40 min from Tue 22:10``."""
    start = _when(ledger, stretch.start)
    gpus = f"{stretch.gpus} GPU" + ("" if stretch.gpus == 1 else "s")
    return f"held {gpus} idle for {fmt_span(stretch.seconds)} from {start:%a %H:%M}"


def offenders(ledger: Ledger, top: int = TOP) -> list[str]:
    """The groups that held the most GPU-hours idle, each with its longest idle stretch."""
    lines: list[str] = []
    for row in ledger.rows:
        if row.idle_held <= 0 or row.longest_idle is None or len(lines) >= top:
            continue
        cost = row.idle_cost(ledger.prices)
        price = "" if cost is None else f", cost {cost:,.2f}"
        lines.append(
            f"{terminal_safe(row.group)}: {stretch_text(ledger, row.longest_idle)} "
            f"({fmt_hours(row.idle_held)} idle-held GPU-hours in all{price})"
        )
    return lines


def thresholds_text(t: Thresholds) -> str:
    """The thresholds, as the table's footer says them."""
    idle = "0 %" if t.idle_pct <= 0 else f"{t.idle_pct:g} %"
    parts = [
        f"idle at most {idle} activity",
        f"held from {t.held_memory_mib:g} MiB or a pod or a process",
        f"waiting under {t.busy_pct:g} %",
    ]
    if t.power_floor_w is not None:
        parts.append(f"not idle from {t.power_floor_w:g} W")
    return "; ".join(parts)


_HEAD = ("GPUs", "allocated", "active", "idle held", "waiting", "free", "unknown", "kWh")


def _cells(row: GroupHours, ledger: Ledger, priced: bool) -> list[str]:
    cells = [
        terminal_safe(row.group),
        str(row.gpus) if row.gpus else "",
        fmt_hours(row.allocated),
        fmt_hours(row.active),
        fmt_hours(row.idle_held),
        fmt_hours(row.waiting),
        fmt_hours(row.free),
        fmt_hours(row.unknown),
        f"{row.energy_kwh:,.1f}",
    ]
    if priced:
        cost = row.idle_cost(ledger.prices)
        cells.append("" if cost is None else f"{cost:,.2f}")
    return cells


def render_table(ledger: Ledger, top: int = TOP) -> str:
    """The ledger as a table of GPU-hours per group, then the top offenders and the cost of
    asking."""
    priced = ledger.prices.gpu_hour is not None or ledger.prices.kwh is not None
    head = [ledger.by.value, *_HEAD, *(["idle cost"] if priced else [])]
    body = [_cells(row, ledger, priced) for row in ledger.rows]
    body.append(_cells(ledger.total(), ledger, priced))
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    widths[0] = min(widths[0], 40)

    def line(cells: list[str]) -> str:
        first = cells[0] if len(cells[0]) <= widths[0] else cells[0][: widths[0] - 1] + "…"
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first.ljust(widths[0]), *rest]).rstrip()

    since = _when(ledger, ledger.since)
    until = _when(ledger, ledger.until)
    step = fmt_span(ledger.step) if ledger.step >= 60 else f"{ledger.step:g} s"
    lines = [
        f"GPU-hours by {ledger.by.value}, {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} "
        f"{since:%Z}, steps of {step}, from {terminal_safe(ledger.source)}",
        line(head),
    ]
    lines += [line(cells) for cells in body[:-1]]
    lines.append(line(["-" * widths[0], *["" for _ in head[1:]]]).rstrip())
    lines.append(line(body[-1]))
    found = offenders(ledger, top)
    if found:
        lines += ["", "Held idle the longest:"]
        lines += [f"  {text}" for text in found]
    lines += ["", f"thresholds: {thresholds_text(ledger.thresholds)}"]
    if ledger.cost.queries:
        lines.append(cost_text(ledger))
    return "\n".join(lines) + "\n"


def cost_text(ledger: Ledger) -> str:
    """``16 queries, 1,234,567 samples read by the server, 8,064 points returned``."""
    cost = ledger.cost
    read = "" if cost.samples is None else f", {cost.samples:,} samples read by the server"
    return f"{cost.queries} queries{read}, {cost.points:,} points returned"


_CSV_HEAD = (
    "group",
    "gpus",
    "allocated_gpu_hours",
    "active_gpu_hours",
    "idle_held_gpu_hours",
    "waiting_gpu_hours",
    "free_gpu_hours",
    "unknown_gpu_hours",
    "energy_kwh",
    "idle_held_kwh",
    "idle_cost",
    "longest_idle_gpus",
    "longest_idle_start",
    "longest_idle_seconds",
)


def render_csv(ledger: Ledger) -> str:
    """One row per group (no total: a spreadsheet adds it up)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_HEAD)
    for row in ledger.rows:
        cost = row.idle_cost(ledger.prices)
        stretch = row.longest_idle
        writer.writerow(
            [
                terminal_safe(row.group),
                row.gpus,
                f"{row.allocated:.4f}",
                f"{row.active:.4f}",
                f"{row.idle_held:.4f}",
                f"{row.waiting:.4f}",
                f"{row.free:.4f}",
                f"{row.unknown:.4f}",
                f"{row.energy_kwh:.4f}",
                f"{row.idle_held_kwh:.4f}",
                "" if cost is None else f"{cost:.2f}",
                "" if stretch is None else stretch.gpus,
                "" if stretch is None else _when(ledger, stretch.start).isoformat(),
                "" if stretch is None else f"{stretch.seconds:.0f}",
            ]
        )
    return out.getvalue()


def _row_dict(row: GroupHours, ledger: Ledger) -> dict[str, Any]:
    stretch = row.longest_idle
    return {
        "group": row.group,
        "gpus": row.gpus,
        "allocated_gpu_hours": row.allocated,
        "active_gpu_hours": row.active,
        "idle_held_gpu_hours": row.idle_held,
        "waiting_gpu_hours": row.waiting,
        "free_gpu_hours": row.free,
        "unknown_gpu_hours": row.unknown,
        "energy_kwh": row.energy_kwh,
        "idle_held_kwh": row.idle_held_kwh,
        "idle_cost": row.idle_cost(ledger.prices),
        "longest_idle": None
        if stretch is None
        else {
            "gpus": stretch.gpus,
            "start": _when(ledger, stretch.start).isoformat(),
            "end": _when(ledger, stretch.end).isoformat(),
            "seconds": stretch.seconds,
        },
    }


def ledger_dict(ledger: Ledger) -> dict[str, Any]:
    """The ledger as the JSON document ``--json`` prints."""
    t = ledger.thresholds
    return {
        "by": ledger.by.value,
        "since": _when(ledger, ledger.since).isoformat(),
        "until": _when(ledger, ledger.until).isoformat(),
        "step_seconds": ledger.step,
        "source": ledger.source,
        "thresholds": {
            "idle_at_most_pct": t.idle_pct,
            "busy_from_pct": t.busy_pct,
            "held_memory_mib": t.held_memory_mib,
            "power_floor_w": t.power_floor_w,
        },
        "prices": {"gpu_hour": ledger.prices.gpu_hour, "kwh": ledger.prices.kwh},
        "groups": [_row_dict(row, ledger) for row in ledger.rows],
        "total": _row_dict(ledger.total(), ledger),
        "daily_idle_held_gpu_hours": [
            {"date": day.isoformat(), "gpu_hours": hours} for day, hours in ledger.daily
        ],
        "queries": ledger.cost.queries,
        "samples": ledger.cost.samples,
        "points": ledger.cost.points,
    }


def render_chart(ledger: Ledger, width: int, height: int = 14, color: bool = True) -> str | None:
    """A bar chart of idle-held GPU-hours per day (None when charts are left out:
    ``plotext_compat.new_figure``)."""
    figure = new_figure()
    if figure is None:
        return None
    # Deferred: plotext (26-100 ms; new_figure loaded it), only for the chart.
    import plotext as plt

    figure.theme("pro" if color else "clear")
    figure.plotsize(max(width, 40), height)
    labels = [f"{day:%a %d}" for day, _ in ledger.daily]
    values = [round(hours, 2) for _, hours in ledger.daily]
    figure.bar(labels or [""], values or [0.0])
    figure.title("idle-held GPU-hours per day")
    text: str = figure.build()
    if not color:
        text = plt.uncolorize(text)
    return "\n".join(line.rstrip() for line in text.splitlines())
