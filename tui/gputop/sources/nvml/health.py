"""A GPU's memory-repair counters from NVML: remapped rows and retired pages.

Read with the slow values (:mod:`gputop.sources.nvml.device`, every few seconds): they move
when the GPU repairs its memory, a handful of times in its life. Ampere and later remap rows
and report page retirement unsupported; Volta and earlier retire pages and know no row
remapper; each says NotSupported for the other, which is remembered (never asked again).

Row remapping is one call (``nvmlDeviceGetRemappedRows``: correctable, uncorrectable,
pending, failure); retired pages are three field values in one call
(``NVML_FI_DEV_RETIRED_SBE``/``_DBE``/``_PENDING``), not ``nvmlDeviceGetRetiredPages``,
which lists every page address to count them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from gputop.model.health import RemappedRows, RetiredPages
from gputop.sources.nvml.api import FieldValue, Handle, NvmlApi, field_number
from gputop.sources.nvml.calls import DeviceCalls

REMAPPED_PATHS = (
    "remapped_rows.correctable",
    "remapped_rows.uncorrectable",
    "remapped_rows.pending",
    "remapped_rows.failure",
)
RETIRED_PATHS = ("retired_pages.single_bit", "retired_pages.double_bit", "retired_pages.pending")


class HealthApi(Protocol):
    """The part of pynvml these counters need (beside :class:`NvmlApi`'s)."""

    NVML_FI_DEV_RETIRED_SBE: int
    NVML_FI_DEV_RETIRED_DBE: int
    NVML_FI_DEV_RETIRED_PENDING: int

    def nvmlDeviceGetRemappedRows(self, handle: Handle) -> tuple[int, int, int, int]: ...
    def nvmlDeviceGetFieldValues(
        self, handle: Handle, fieldIds: Sequence[int]
    ) -> Sequence[FieldValue]: ...


def read_remapped_rows(c: DeviceCalls, nvml: NvmlApi, h: Handle) -> RemappedRows:
    """The row remapper's four answers, or None for each with its reason."""
    api = cast(HealthApi, nvml)
    found = c.call(
        "remapped_rows",
        REMAPPED_PATHS,
        getattr(api, "nvmlDeviceGetRemappedRows", None),
        h,
        slow=True,
    )
    if found is None:
        return RemappedRows()
    correctable, uncorrectable, pending, failure = found
    return RemappedRows(
        correctable=int(correctable),
        uncorrectable=int(uncorrectable),
        pending=bool(pending),
        failure=bool(failure),
    )


def read_retired_pages(c: DeviceCalls, nvml: NvmlApi, h: Handle) -> RetiredPages:
    """Pages retired after single- and double-bit errors, and whether one is pending."""
    api = cast(HealthApi, nvml)
    ids = [
        api.NVML_FI_DEV_RETIRED_SBE,
        api.NVML_FI_DEV_RETIRED_DBE,
        api.NVML_FI_DEV_RETIRED_PENDING,
    ]
    values = c.call(
        "field:retired_pages", RETIRED_PATHS, api.nvmlDeviceGetFieldValues, h, ids, slow=True
    )
    if values is None:
        return RetiredPages()
    codes = {value.nvmlReturn for value in values}
    if nvml.NVML_SUCCESS not in codes and len(codes) == 1:
        # None of the three (page retirement is gone since Ampere): never asked again.
        c.refuse("field:retired_pages", RETIRED_PATHS, codes.pop())
        return RetiredPages()
    numbers: list[int | None] = []
    for path, value in zip(RETIRED_PATHS, values, strict=True):
        if value.nvmlReturn != nvml.NVML_SUCCESS:
            c.refuse(f"field:{path}", (path,), value.nvmlReturn)
            numbers.append(None)
            continue
        numbers.append(int(field_number(nvml, value.valueType, value.value)))
    single, double, pending = numbers
    return RetiredPages(
        single_bit=single, double_bit=double, pending=None if pending is None else bool(pending)
    )
