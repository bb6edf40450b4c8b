"""ui/safe_view: the TUI's copy of a tick has every outside string terminal-safe, is the
very tick when there is nothing to escape, and keeps a hostile object's copy the same object
from tick to tick."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

from gputop.model.fleet import FleetSnapshot, NodeView
from gputop.pipeline.tick import SinkStatus, Tick
from gputop.ui.safe_view import SafeView
from support.apps import load
from support.hostile_names import GPU_NAME, HOST, POD, TITLE, hostile, obeyed

SNAPSHOT = load(Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml")


def strings(value: object) -> list[str]:
    """Every string inside ``value`` (dataclasses and tuples)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple):
        return [text for item in value for text in strings(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [text for f in dataclasses.fields(value) for text in strings(getattr(value, f.name))]
    return []


def test_a_clean_tick_is_handed_on_as_it_is() -> None:
    tick = Tick(seq=1, snapshot=SNAPSHOT, window=(SNAPSHOT,), notes=("recording stopped",))
    assert SafeView()(tick) is tick


def test_every_string_of_a_hostile_tick_is_made_safe_and_the_model_keeps_its_own() -> None:
    snapshot = hostile(SNAPSHOT)
    tick = Tick(
        seq=1,
        snapshot=snapshot,
        window=(SNAPSHOT, snapshot),
        error=f"read failed: {TITLE}",
        notes=(POD,),
        sinks=(SinkStatus("--log", f"/tmp/{TITLE}.csv", f"full{TITLE}"),),
    )
    safe = SafeView()(tick)
    texts = strings(safe)
    assert texts and all(obeyed(text) == [] and "\n" not in text for text in texts)
    assert safe.window[0] is SNAPSHOT  # what needed nothing is the same object
    assert safe.window[1] is safe.snapshot
    assert snapshot.gpus[0].name == GPU_NAME  # the tick it came from is untouched
    assert safe.snapshot.gpus[0].name == "[bold red]A100\\x1b]0;pwned\\x07\\x1b[2J"


def test_the_same_hostile_objects_give_the_same_copies_tick_after_tick() -> None:
    view = SafeView()
    snapshot = hostile(SNAPSHOT)
    first = view(Tick(seq=1, snapshot=snapshot))
    second = view(Tick(seq=2, snapshot=snapshot, window=(snapshot,)))
    assert second.snapshot is first.snapshot and second.window[0] is first.snapshot
    newer = dataclasses.replace(snapshot, timestamp=None)  # a new snapshot, the same processes
    third = view(Tick(seq=3, snapshot=newer))
    assert third.snapshot.gpus[0].processes[0] is first.snapshot.gpus[0].processes[0]


def test_a_fleet_keeps_its_hosts_true_as_keys() -> None:
    node = NodeView(host=HOST, snapshot=hostile(SNAPSHOT), newest_sample=None, stale=False)
    fleet = FleetSnapshot(
        taken_at=datetime(2024, 1, 4),
        nodes=(node,),
        error=HOST,
    )
    safe = SafeView()(fleet)
    assert safe.nodes[0].host == HOST  # a node is opened by it; drawn escaped
    assert obeyed(safe.error or "") == [] and obeyed(safe.nodes[0].snapshot.host or "") == []
