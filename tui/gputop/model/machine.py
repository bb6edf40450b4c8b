"""Which machine a snapshot is of: its host, and its GPUs by UUID.

A directory of captures, or a stream appended to from several places, can hold snapshots of
different machines. Their GPUs must never be taken for one another by position (GPU 0 of a
T4 box and GPU 0 of a 4090 box are two GPUs), nor their clocks for one timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.model.sample import Snapshot


def identities(snapshot: Snapshot) -> dict[str, str | None]:
    """The snapshot's GPUs that have a UUID: UUID -> product name."""
    return {gpu.uuid: gpu.name for gpu in snapshot.gpus if gpu.uuid}


def _share_a_gpu(a: dict[str, str | None], b: dict[str, str | None]) -> bool:
    """One GPU in both: the same UUID under the same name (where both name one).

    The name is checked too: anonymised captures share made-up UUIDs across models.
    """
    if len(a) > len(b):
        a, b = b, a
    for uuid, name in a.items():
        if uuid in b:
            other = b[uuid]
            if name is None or other is None or name == other:
                return True
    return False


def same_machine(a: Snapshot, b: Snapshot) -> bool:
    """Could ``a`` and ``b`` be of one machine? Not when their hosts differ (both known),
    nor when both list GPUs by UUID and no GPU is in both. A GPU that falls off the bus or
    comes back leaves the others in common, so that is still the same machine."""
    if a.host and b.host and a.host != b.host:
        return False
    ours, theirs = identities(a), identities(b)
    return not ours or not theirs or _share_a_gpu(ours, theirs)


@dataclass(slots=True)
class Machine:
    """A machine seen in a recording: its host (when known) and every GPU seen on it."""

    host: str | None
    gpus: dict[str, str | None] = field(default_factory=dict)

    def takes(self, host: str | None, gpus: dict[str, str | None]) -> bool:
        """Could a snapshot with this host and these GPUs be of this machine?"""
        if host and self.host and host != self.host:
            return False
        return not gpus or not self.gpus or _share_a_gpu(gpus, self.gpus)

    def describe(self) -> str:
        """``host (4x NVIDIA GeForce RTX 3090)``, or only the GPUs when the host is unknown."""
        names: dict[str, int] = {}
        for name in self.gpus.values():
            label = name or "unnamed GPU"
            names[label] = names.get(label, 0) + 1
        gpus = ", ".join(f"{n}x {name}" if n > 1 else name for name, n in names.items())
        if self.host:
            return f"{self.host} ({gpus or 'no GPU'})"
        return gpus or "no GPU"


class Machines:
    """The machines of a sequence of snapshots, in the order first seen."""

    __slots__ = ("_last", "machines")

    def __init__(self) -> None:
        self.machines: list[Machine] = []
        self._last: tuple[str | None, tuple[str | None, ...], int] | None = None
        """(host, UUIDs, machine) of the last snapshot: a recording repeats them."""

    def add(self, snapshot: Snapshot) -> int:
        """The number of the machine ``snapshot`` is of (a new one if none fits)."""
        uuids = tuple(gpu.uuid for gpu in snapshot.gpus)
        last = self._last
        if last is not None and last[0] == snapshot.host and last[1] == uuids:
            return last[2]
        number = self.add_gpus(snapshot.host, identities(snapshot))
        self._last = (snapshot.host, uuids, number)
        return number

    def add_gpus(self, host: str | None, gpus: dict[str, str | None]) -> int:
        """The number of the machine with ``host`` and ``gpus`` (a new one if none fits)."""
        for number, machine in enumerate(self.machines):
            if machine.takes(host, gpus):
                machine.host = machine.host or host
                for uuid, name in gpus.items():
                    if machine.gpus.get(uuid) is None:
                        machine.gpus[uuid] = name
                return number
        self.machines.append(Machine(host, dict(gpus)))
        return len(self.machines) - 1

    def merge(self, other: Machines) -> None:
        """Take in the machines ``other`` saw."""
        for machine in other.machines:
            self.add_gpus(machine.host, machine.gpus)
        self._last = None
