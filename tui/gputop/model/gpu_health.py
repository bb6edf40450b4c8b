"""What is wrong with a GPU's health now, from its sample alone: one rule for every view.

The panel's red line, ``--once``'s problem lines, the report's health changes and the
cluster's health per node all read :func:`gpu_problems`, so they agree on what a problem is:

* critical: the GPU is lost (fell off the bus, stopped answering); a row remap failed (no
  spare row left) or waits for a reset; uncorrectable (double-bit) ECC errors since the
  driver loaded;
* warning: a page retirement waits for a reset; a thermal or hardware slowdown is holding
  the clocks down (the power cap is not a health problem: a busy GPU at its cap is working).

Counters that only add up over the GPU's life (retired pages, rows remapped after
correctable errors, lifetime ECC) are shown beside the others but are no problem by
themselves: the repair worked.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.model.health import Severity
from gputop.model.sample import GpuSample
from gputop.model.throttle import ThrottleKind, reasons_of_kind


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a GPU now."""

    severity: Severity
    text: str
    """What a person reads: ``row remap pending: reset the GPU to apply it``."""
    key: str
    """What it is, stable across samples (``remap_pending``): what an acknowledgement names."""


def gpu_problems(gpu: GpuSample) -> tuple[Problem, ...]:
    """The GPU's health problems now, critical first."""
    if gpu.lost:
        return (
            Problem(Severity.CRITICAL, "GPU lost: fell off the bus or stopped answering", "lost"),
        )
    found: list[Problem] = []
    rows = gpu.remapped_rows
    if rows.failure:
        found.append(
            Problem(
                Severity.CRITICAL,
                "row remapping failed: drain the GPU and contact support",
                "remap_failure",
            )
        )
    if rows.pending:
        found.append(
            Problem(
                Severity.CRITICAL, "row remap pending: reset the GPU to apply it", "remap_pending"
            )
        )
    uncorrected = gpu.ecc_errors.volatile_uncorrected
    if uncorrected:
        found.append(
            Problem(
                Severity.CRITICAL,
                f"{uncorrected} uncorrectable ECC error{'s' if uncorrected != 1 else ''} "
                "since the driver loaded",
                "ecc_uncorrected",
            )
        )
    if gpu.retired_pages.pending:
        found.append(
            Problem(
                Severity.WARNING,
                "page retirement pending: reset the GPU to apply it",
                "retirement_pending",
            )
        )
    thermal = reasons_of_kind(gpu.throttle_reasons, ThrottleKind.THERMAL)
    if thermal:
        found.append(
            Problem(Severity.WARNING, f"thermal slowdown ({', '.join(thermal)})", "thermal")
        )
    hardware = reasons_of_kind(gpu.throttle_reasons, ThrottleKind.HARDWARE)
    if hardware:
        found.append(
            Problem(Severity.WARNING, f"hardware slowdown ({', '.join(hardware)})", "hardware")
        )
    return tuple(found)
