"""`--gpu SPEC`: which GPUs (and MIG devices) to show, as a pure function over a Snapshot.

A spec is a comma list of NVML indices (``0,2``), GPU UUIDs or unambiguous prefixes of them
(``GPU-8f2a``), MIG device UUIDs or prefixes (``MIG-4c1e``: the parent GPU with only that MIG
device), and PCI bus ids in any of nvidia-smi's spellings (``00000000:65:00.0``,
``0000:65:00.0``, ``65:00.0``). Matching is case-insensitive and works the same on live and
replayed snapshots, so a selection can be parsed once and applied to every tick.

Also here: what ``NVIDIA_VISIBLE_DEVICES`` / ``CUDA_VISIBLE_DEVICES`` name, because users
compare them with the indices gputop shows, and CUDA's numbering need not be NVML's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from gputop.errors import BadArguments
from gputop.model import GpuSample, MigDeviceSample, Snapshot

_PCI = re.compile(
    r"^(?:(?P<domain>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<device>[0-9a-f]{1,2})"
    r"\.(?P<function>[0-7])$",
    re.IGNORECASE,
)
_UUID_BODY = re.compile(r"^[0-9a-f-]*$", re.IGNORECASE)

_Kind = Literal["index", "gpu-uuid", "mig-uuid", "pci"]

PciAddress = tuple[int, int, int, int]
"""(domain, bus, device, function)."""


def parse_pci_bus_id(text: str) -> PciAddress | None:
    """Normalise any of nvidia-smi's/NVML's/lspci's bus id spellings, or None if not one."""
    match = _PCI.match(text.strip())
    if match is None:
        return None
    return (
        int(match.group("domain") or "0", 16),
        int(match.group("bus"), 16),
        int(match.group("device"), 16),
        int(match.group("function")),
    )


def short_uuid(uuid: str | None) -> str:
    """``GPU-513536b6-7d19-...`` as ``GPU-513536b6``: enough to tell GPUs of one host apart."""
    if not uuid:
        return "no-uuid"
    prefix, _, rest = uuid.partition("-")
    return f"{prefix}-{rest[:8]}" if rest else uuid


@dataclass(frozen=True, slots=True)
class _Term:
    """One comma-separated item of the spec."""

    text: str
    kind: _Kind
    index: int | None = None
    prefix: str | None = None
    pci: PciAddress | None = None

    def gpu_matches(self, gpu: GpuSample) -> bool:
        if self.kind == "index":
            return gpu.index == self.index
        if self.kind == "gpu-uuid":
            return (gpu.uuid or "").lower().startswith(self.prefix or "\0")
        if self.kind == "pci":
            return gpu.pci_bus_id is not None and parse_pci_bus_id(gpu.pci_bus_id) == self.pci
        return False

    def mig_matches(self, device: MigDeviceSample) -> bool:
        return self.kind == "mig-uuid" and (device.uuid or "").lower().startswith(
            self.prefix or "\0"
        )


def _parse_term(text: str) -> _Term:
    lowered = text.lower()
    if text.isdigit():
        return _Term(text, "index", index=int(text))
    if lowered.startswith(("gpu-", "mig-")):
        body = lowered[4:]
        # Old-style MIG ids are "MIG-GPU-<uuid>/<gi>/<ci>"; allow "/" and digits after it.
        if not body or not _UUID_BODY.match(body.replace("gpu-", "", 1).replace("/", "")):
            raise BadArguments(f"--gpu {text!r}: not a GPU or MIG UUID")
        return _Term(text, "mig-uuid" if lowered.startswith("mig-") else "gpu-uuid", prefix=lowered)
    pci = parse_pci_bus_id(text)
    if pci is not None:
        return _Term(text, "pci", pci=pci)
    raise BadArguments(
        f"--gpu {text!r}: expected an index, a GPU-/MIG- UUID (or prefix) or a PCI bus id "
        "such as 00000000:65:00.0"
    )


@dataclass(frozen=True, slots=True)
class GpuSelection:
    """A parsed ``--gpu`` spec; ``apply`` it to each snapshot."""

    spec: str
    terms: tuple[_Term, ...]

    @classmethod
    def parse(cls, spec: str) -> GpuSelection:
        """Check the spec's syntax once.

        Raises:
            BadArguments: an item that is no index, UUID or bus id, or an empty spec.
        """
        items = [item.strip() for item in spec.split(",")]
        if not any(items):
            raise BadArguments("--gpu needs at least one index, UUID or PCI bus id")
        return cls(spec, tuple(_parse_term(item) for item in items if item))

    def apply(self, snapshot: Snapshot, *, strict: bool = True) -> Snapshot:
        """Keep only the selected GPUs, and of a GPU chosen by MIG UUID only those devices.

        With ``strict`` (the default), every item must match exactly one GPU or MIG device
        of this snapshot. Live views check the first snapshot strictly and later ones with
        ``strict=False``, so a GPU that falls off the bus mid-run does not end the run.

        Raises:
            BadArguments: strict, and an item matched nothing or more than one device; the
                single-line message lists what exists.
        """
        if strict:
            self._check(snapshot)
        kept: list[GpuSample] = []
        for gpu in snapshot.gpus:
            if any(term.gpu_matches(gpu) for term in self.terms):
                kept.append(gpu)
                continue
            devices = tuple(
                device
                for device in gpu.mig_devices
                if any(term.mig_matches(device) for term in self.terms)
            )
            if devices:
                kept.append(_only_devices(gpu, devices))
        if not snapshot.events:
            return dataclasses.replace(snapshot, gpus=tuple(kept))
        # The health events of the GPUs kept: an XID of another GPU is not this view's.
        indices = {gpu.index for gpu in kept}
        events = tuple(event for event in snapshot.events if event.gpu in indices)
        return dataclasses.replace(snapshot, gpus=tuple(kept), events=events)

    def _check(self, snapshot: Snapshot) -> None:
        for term in self.terms:
            if term.kind == "mig-uuid":
                hits = [
                    device.uuid or ""
                    for gpu in snapshot.gpus
                    for device in gpu.mig_devices
                    if term.mig_matches(device)
                ]
            else:
                hits = [str(gpu.index) for gpu in snapshot.gpus if term.gpu_matches(gpu)]
            if not hits:
                raise BadArguments(
                    f"--gpu {self.spec}: nothing matches {term.text!r}; "
                    f"{describe_devices(snapshot)}"
                )
            if len(hits) > 1:
                raise BadArguments(
                    f"--gpu {self.spec}: {term.text!r} is ambiguous, it starts "
                    f"{len(hits)} UUIDs; give more of it. {describe_devices(snapshot)}"
                )


def _only_devices(gpu: GpuSample, devices: tuple[MigDeviceSample, ...]) -> GpuSample:
    instances = {(device.gpu_instance_id, device.compute_instance_id) for device in devices}
    processes = tuple(
        process
        for process in gpu.processes
        if (process.gpu_instance_id, process.compute_instance_id) in instances
        or (
            process.compute_instance_id is None
            and any(process.gpu_instance_id == gi for gi, _ in instances)
        )
    )
    return dataclasses.replace(gpu, mig_devices=devices, processes=processes)


def describe_devices(snapshot: Snapshot) -> str:
    """One line naming every GPU (index, short UUID, bus id) and MIG device of a snapshot."""
    if not snapshot.gpus:
        return "no GPUs here"
    parts: list[str] = []
    for gpu in snapshot.gpus:
        part = f"{gpu.index} {short_uuid(gpu.uuid)} {gpu.pci_bus_id or 'no-bus-id'}"
        migs = [short_uuid(device.uuid) for device in gpu.mig_devices if device.uuid]
        if migs:
            part += f" (MIG {' '.join(migs)})"
        parts.append(part)
    return "GPUs here: " + ", ".join(parts)


def _device_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def describe_visible_devices(
    environ: Mapping[str, str], gpus: int, uuids: Sequence[str | None] = ()
) -> str | None:
    """Say where NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES and what NVML shows disagree;
    None when neither is set, or both say what NVML shows.

    ``gpus`` is how many GPUs NVML enumerates, which is what gputop shows, and ``uuids``
    their UUIDs. The container runtime reads NVIDIA_VISIBLE_DEVICES once, when it starts a
    container; the variable is also inherited by shells and jobs where no runtime acted on
    it (a host login that sets it, ``docker exec`` into a container started otherwise). So
    the note never claims what the runtime did: where the variable asks for other GPUs than
    NVML shows (another count, a UUID NVML does not have, GPUs where it asked for none), it
    says what was asked and what NVML shows. Where they agree (``NVIDIA_VISIBLE_DEVICES=0``
    and the one GPU NVML shows), nothing is said: a headless run's stderr is for what
    matters.

    gputop numbers GPUs as NVML does (PCI bus order). CUDA numbers them fastest first unless
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, and renumbers the visible ones from 0, so the same
    number can mean different GPUs in a CUDA program and here: said unless CUDA's numbers
    are NVML's (every GPU, in order, one GPU or PCI bus order).
    """
    notes: list[str] = []
    shown = f"NVML shows {gpus} GPU{'' if gpus == 1 else 's'}"
    nvidia = environ.get("NVIDIA_VISIBLE_DEVICES")
    if nvidia is not None:
        value = nvidia.strip()
        if value.lower() == "all":
            pass  # every GPU: whatever NVML shows is what was asked
        elif value.lower() in ("", "none", "void"):
            if gpus:
                notes.append(
                    f"NVIDIA_VISIBLE_DEVICES={value or '(empty)'} asks a container runtime for "
                    f"no GPU, yet {shown}: it was not applied here, and gputop shows what NVML "
                    "sees"
                )
        else:
            devices = _device_list(value)
            if gpus != len(devices) or _unknown_uuids(devices, uuids):
                notes.append(
                    f"NVIDIA_VISIBLE_DEVICES={value} asks a container runtime for host GPU(s) "
                    f"{', '.join(devices)}, yet {shown}: it was not applied as asked here, "
                    "and gputop shows what NVML sees"
                )
    cuda = environ.get("CUDA_VISIBLE_DEVICES")
    if cuda is not None and not _cuda_numbers_are_nvmls(cuda, gpus, environ):
        notes.append(_describe_cuda(cuda, gpus, environ))
    return "; ".join(notes) if notes else None


def _unknown_uuids(devices: Sequence[str], uuids: Sequence[str | None]) -> bool:
    """Whether a GPU UUID (or prefix) the variable names is none of those NVML shows."""
    known = [uuid.lower() for uuid in uuids if uuid]
    if not known:
        return False
    return any(
        item.lower().startswith("gpu-") and not any(u.startswith(item.lower()) for u in known)
        for item in devices
    )


def _cuda_numbers_are_nvmls(cuda: str, gpus: int, environ: Mapping[str, str]) -> bool:
    """CUDA sees every GPU under NVML's number: all listed, in order, in NVML's order."""
    items = _device_list(cuda)
    if not gpus or items != [str(n) for n in range(gpus)]:
        return False
    return gpus == 1 or environ.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID"


def _describe_cuda(cuda: str, gpus: int, environ: Mapping[str, str]) -> str:
    items = _device_list(cuda)
    # CUDA reads the list up to the first entry that names no GPU (a negative or too high
    # index); the ones after it are ignored.
    for n, item in enumerate(items):
        if item.startswith("-") or (item.isdigit() and int(item) >= gpus):
            items = items[:n]
            break
    if not items:
        return f"CUDA_VISIBLE_DEVICES={cuda!r}: CUDA programs see no GPU"
    renumbered = ", ".join(f"{item} as cuda:{n}" for n, item in enumerate(items))
    note = f"CUDA_VISIBLE_DEVICES={cuda}: CUDA programs see {renumbered}"
    if environ.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID":
        return note + " (CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's order is NVML's, shown here)"
    return note + (
        "; CUDA orders GPUs fastest first, which can differ from NVML's order "
        "shown here: set CUDA_DEVICE_ORDER=PCI_BUS_ID to make them agree"
    )
