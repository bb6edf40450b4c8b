"""Who holds a process or a GPU: a container, a Kubernetes pod, a Slurm job.

Found on the host (``/proc/PID/cgroup``, ``/var/log/pods``, a runtime's directories, the
process environment) or from the kubelet's PodResources API, and carried by the model so that
every view (process table, GPU panel, MIG tree, JSON, exporter, fleet) reads the same answer.
Each field is None when its lookup failed or does not apply: "unknown", never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Owner:
    """The container, pod and/or job a process (or a device) belongs to."""

    runtime: str | None = None
    """``"containerd"``, ``"cri-o"``, ``"docker"``, ``"podman"``, ``"slurm"``, ... as found."""
    container_id: str | None = None
    """The runtime's full container id (64 hex digits for containerd, CRI-O and Docker)."""
    container: str | None = None
    """The container's name (Kubernetes container name, or Docker's ``--name``)."""
    pod: str | None = None
    namespace: str | None = None
    pod_uid: str | None = None
    """With ``-`` separators, as the API server writes it (cgroup paths use ``_``)."""
    slurm_job: str | None = None

    @property
    def is_known(self) -> bool:
        """True when any lookup gave an answer."""
        return any(
            value is not None
            for value in (
                self.runtime,
                self.container_id,
                self.container,
                self.pod,
                self.namespace,
                self.pod_uid,
                self.slurm_job,
            )
        )
