"""Which container, pod or Slurm job a process is in, from the text of ``/proc/PID/cgroup``.

Pure parsing, no I/O. Each runtime and cgroup driver spells the path its own way; the forms
read here (real examples of each are in ``tests/unit/test_cgroup_paths.py``):

* Kubernetes, systemd driver (cgroup v1 or v2): ``/kubepods.slice/kubepods-burstable.slice/
  kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope`` (``crio-<id>.scope``
  for CRI-O, ``docker-<id>.scope`` for dockershim; guaranteed pods have no QoS level,
  ``kubepods-pod<uid>.slice``; kind nodes nest it all under ``kubelet.slice/kubelet-…``);
* Kubernetes, cgroupfs driver: ``/kubepods/besteffort/pod<uid>/<id>`` (``/kubepods/pod<uid>/
  <id>`` for guaranteed pods; CRI-O's own cgroupfs manager writes ``…/pod<uid>/crio-<id>``,
  with no ``.scope``, which is systemd's);
* a node that is itself a container (kind, minikube's docker driver): the node's
  ``/docker/<node id>`` comes first, then the pod's path; the innermost container is the
  process's, and only its own spelling says its runtime;
* Docker: ``/docker/<id>`` (cgroupfs) or ``/system.slice/docker-<id>.scope`` (systemd);
* containerd 1.4 on cgroup v1 with the systemd driver: runc's unconverted
  ``…/kubepods-besteffort-pod<uid>.slice:cri-containerd:<id>``;
* podman: ``…/libpod-<id>.scope`` (and a ``/container`` sub-group under it on cgroup v2);
* Slurm: ``/slurm/uid_<n>/job_<n>/step_…`` (v1) or ``/system.slice/slurmstepd.scope/job_<n>/…``
  (v2; ``<node>_slurmstepd.scope`` when several slurmd run on one host).

Inside a cgroup namespace the kernel writes paths relative to the reader's root, possibly
with ``..`` components; the components are scanned one by one, so that does not matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SCOPE = re.compile(
    r"(?P<prefix>cri-containerd|crio-conmon|crio|docker|libpod-conmon|libpod|containerd)"
    r"-(?P<id>[0-9a-f]{64})(?:\.scope)?"
)
_POD = re.compile(r"(?:^|-)pod(?P<uid>[0-9a-fA-F]{8}[_-]?[0-9a-fA-F_-]{24,28})(?:\.slice)?$")
_JOB = re.compile(r"job_(?P<job>\d+)")

_RUNTIMES = {
    "cri-containerd": "containerd",
    "containerd": "containerd",
    "crio": "cri-o",
    "crio-conmon": "cri-o",
    "docker": "docker",
    "libpod": "podman",
    "libpod-conmon": "podman",
}


@dataclass(frozen=True, slots=True)
class CgroupFacts:
    """What one cgroup path says; each None when it says nothing of it."""

    runtime: str | None = None
    container_id: str | None = None
    pod_uid: str | None = None
    slurm_job: str | None = None

    @property
    def weight(self) -> int:
        """How much it says: the line that says most wins."""
        return sum(
            value is not None
            for value in (self.runtime, self.container_id, self.pod_uid, self.slurm_job)
        )


def pod_uid(text: str) -> str:
    """A pod UID as the API server writes it: the systemd driver's ``_`` become ``-``."""
    return text.replace("_", "-").lower()


def parse_path(path: str) -> CgroupFacts:
    """The facts of one cgroup path (``/kubepods/besteffort/pod…/…``)."""
    runtime = container_id = uid = job = None
    # containerd 1.4 with the systemd driver on cgroup v1 could leave runc's
    # "slice:prefix:id" spelling in the path as it is: split at ":" too.
    parts = [
        piece
        for part in path.split("/")
        if part and part != ".."
        for piece in part.split(":")
        if piece
    ]
    slurm = False
    for n, part in enumerate(parts):
        # A later container is inside an earlier one (a kind node's pods): it replaces the
        # outer one, runtime and all.
        scope = _SCOPE.fullmatch(part)
        if scope is not None:
            runtime = _RUNTIMES[scope["prefix"]]
            container_id = scope["id"]
            continue
        if _HEX64.fullmatch(part):
            container_id = part
            before = parts[n - 1] if n > 0 else ""
            runtime = _RUNTIMES.get(before)
            continue
        if "kubepods" in part or (part.startswith("pod") and uid is None):
            found = _POD.search(part)
            if found is not None:
                uid = pod_uid(found["uid"])
                continue
        if "slurm" in part:
            slurm = True
            continue
        if slurm and job is None:
            found_job = _JOB.fullmatch(part)
            if found_job is not None:
                job = found_job["job"]
    if job is not None and runtime is None and container_id is None:
        runtime = "slurm"
    return CgroupFacts(runtime, container_id, uid, job)


def parse_cgroup(text: str) -> CgroupFacts:
    """The facts of a ``/proc/PID/cgroup`` file: of its line that says most.

    Lines are ``hierarchy-id:controllers:path``; cgroup v2 has the one ``0::path``, v1 a
    line per controller hierarchy (which usually agree; ``name=systemd`` may not).
    """
    best = CgroupFacts()
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        facts = parse_path(fields[2])
        if facts.weight > best.weight:
            best = facts
    return best
