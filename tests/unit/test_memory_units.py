"""Memory amounts as people read them: exact enough, never zero when used, one unit a row."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputop.model import GpuSample, Memory, MigDeviceSample, Snapshot
from gputop.model.units import fmt_bytes, fmt_used_of
from gputop.ui.render.gauges import compact_gauges, gauges
from gputop.ui.widgets.mig_tree import mig_outline

MIB = 1024**2
GIB = 1024**3
RTX_3090 = 24576 * MIB
RTX_4090 = 24564 * MIB
"""23.99 GiB: what nvidia-smi reports as the total of a 4090."""


def card(used: int, total: int = RTX_4090) -> GpuSample:
    return GpuSample(index=0, uuid="GPU-a", memory=Memory(total=total, used=used))


def test_a_total_just_under_24_gib_is_not_rounded_up_to_24() -> None:
    assert gauges(card(18 * GIB))[1].value == "18.00/23.99GiB"
    assert compact_gauges(card(18 * GIB))[1].value == "18.00/23.99G"
    assert gauges(card(18 * GIB, RTX_3090))[1].value == "18.00/24.00GiB"


@pytest.mark.parametrize("used", [1, 512 * 1024, 4 * MIB, 5 * MIB])
def test_a_few_mib_used_never_read_as_zero(used: int) -> None:
    for text in (gauges(card(used))[1].value, compact_gauges(card(used))[1].value):
        shown = text.split("/")[0]
        assert shown.strip("<") not in ("0", "0.0", "0.00")
        # The whole pair goes to MiB rather than mix units: "4/24564MiB".
        assert text.endswith(("24564MiB", "24564M"))
    assert fmt_bytes(used) != "0MiB"


def test_nothing_used_reads_zero() -> None:
    assert gauges(card(0))[1].value == "0.00/23.99GiB"
    assert fmt_bytes(0) == "0MiB"


@given(
    used=st.integers(min_value=0, max_value=200 * GIB),
    total=st.integers(min_value=MIB, max_value=200 * GIB),
    short=st.booleans(),
)
def test_one_unit_a_pair_and_a_used_amount_never_shows_as_zero(
    used: int, total: int, short: bool
) -> None:
    text = fmt_used_of(used, total, short=short)
    # The unit once, at the end; both numbers in it.
    number, _, rest = text.partition("/")
    unit = rest.lstrip("0123456789.")
    assert unit in (("G", "M") if short else ("GiB", "MiB"))
    assert not any(letter.isalpha() for letter in number)
    if used > 0:
        assert number.startswith("<") or float(number) > 0
    # Exact to the digits shown: no more than half the last digit off.
    digits = len(number.partition(".")[2])
    scale = GIB if unit.startswith("G") else MIB
    if not number.startswith("<"):
        assert abs(float(number) - used / scale) <= (10**-digits if digits else 1)


def test_mig_instances_share_the_gpus_unit() -> None:
    devices = tuple(
        MigDeviceSample(
            index=slot,
            gpu_instance_id=7 + slot,
            compute_instance_id=0,
            profile="1g.10gb",
            memory=Memory(total=9984 * MIB, used=used),
        )
        for slot, used in enumerate((12 * MIB, 5133 * MIB))
    )
    gpu = dataclasses.replace(card(10000 * MIB, 81559 * MIB), mig_mode=True, mig_devices=devices)
    outline = mig_outline(Snapshot(timestamp=None, gpus=(gpu,)))
    texts = [outline[0].label.plain] + [child.label.plain for child in outline[0].children]
    memory = [part for text in texts for part in text.split(" · ") if part.startswith("memory")]
    assert memory == ["memory 9.77/79.65GiB", "memory 0.01/9.75GiB", "memory 5.01/9.75GiB"]
