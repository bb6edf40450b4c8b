"""A Kubernetes (or Docker, or Slurm) node's files in a temp dir: ``proc/<pid>/{stat,cgroup,
environ}``, ``var/log/pods``, ``var/log/containers`` and the runtimes' per-container files.

The cgroup paths the tests write are real ones, collected from public sources (see
``snapshots/README.md``, "Cgroup paths"), in :data:`REAL`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RealPath:
    """One real ``/proc/PID/cgroup`` text and what it says."""

    text: str
    runtime: str | None
    container_id: str | None
    pod_uid: str | None
    slurm_job: str | None = None


REAL: dict[str, RealPath] = {
    # Elastic Beats' container-id tests: containerd, systemd driver, cgroup v2.
    "containerd-systemd-v2": RealPath(
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2d5133c0_65f3_40b2_"
        "b375_c04866d418e1.slice/cri-containerd-e01a26336924e2fb8089bcf4cf943954fd9ea616cc5678"
        "f38f65928307979459.scope\n",
        "containerd",
        "e01a26336924e2fb8089bcf4cf943954fd9ea616cc5678f38f65928307979459",
        "2d5133c0-65f3-40b2-b375-c04866d418e1",
    ),
    # A calico-node container on CRI-O, cgroup v1 (its cpu,cpuacct hierarchy), from a
    # kubelet log quoted in opencontainers/runc issue #4620.
    "crio-v1-calico": RealPath(
        "4:cpu,cpuacct:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podcafb7d2e_"
        "c99d_4f7a_88fc_dd55531fd545.slice/crio-5421387b6d8ed001ef38d5461a4675e4822561082d3115"
        "c254c11addad43c1a6.scope\n",
        "cri-o",
        "5421387b6d8ed001ef38d5461a4675e4822561082d3115c254c11addad43c1a6",
        "cafb7d2e-c99d-4f7a-88fc-dd55531fd545",
    ),
    # NeuVector's cgroup tests: containerd 1.4.4, cgroup v1, systemd driver, where runc's
    # "slice:prefix:id" was left in the path (some controllers under containerd.service).
    "containerd-v1-colons": RealPath(
        "11:pids:/system.slice/containerd.service/kubepods-besteffort-pod2105e389_7471_476e_"
        "a50f_6074cef29bbd.slice:cri-containerd:d3d8ccf5cca91931c6285c1d7472c413dd5a7700fddc0a"
        "a9f89a9ac7008b003e\n"
        "10:freezer:/kubepods-besteffort-pod2105e389_7471_476e_a50f_6074cef29bbd.slice:cri-"
        "containerd:d3d8ccf5cca91931c6285c1d7472c413dd5a7700fddc0aa9f89a9ac7008b003e\n",
        "containerd",
        "d3d8ccf5cca91931c6285c1d7472c413dd5a7700fddc0aa9f89a9ac7008b003e",
        "2105e389-7471-476e-a50f-6074cef29bbd",
    ),
    # NeuVector's cgroup tests: CRI-O 1.19 on OpenShift 4.6 (cgroup v1, systemd driver),
    # some of its controllers' lines and its rdma line (at the root).
    "crio-v1": RealPath(
        "".join(
            f"{n}:{controller}:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-"
            "pod8ca306fa_3c03_47fa_97dd_19979c345572.slice/crio-d6d725b909f37c3e232aadfbafa950a"
            "58bfe7baa579ba8c47a12be88bb921607.scope\n"
            for n, controller in ((12, "devices"), (11, "pids"), (10, "freezer"), (3, "memory"))
        )
        + "6:rdma:/\n"
        + "1:name=systemd:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-"
        "pod8ca306fa_3c03_47fa_97dd_19979c345572.slice/crio-d6d725b909f37c3e232aadfbafa950a58"
        "bfe7baa579ba8c47a12be88bb921607.scope\n",
        "cri-o",
        "d6d725b909f37c3e232aadfbafa950a58bfe7baa579ba8c47a12be88bb921607",
        "8ca306fa-3c03-47fa-97dd-19979c345572",
    ),
    # NeuVector's cgroup tests: CRI-O 1.17 on an OpenShift 4.4 master, a static pod (its UID
    # is the manifest's 32-digit hash), two of its controllers' lines.
    "crio-static-pod": RealPath(
        "12:hugetlb:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod487a0dc6dcc"
        "aeefbcfedba7a7ce1ca18.slice/crio-7a1fd6fe8cdfbd44dc78c4cc85dad7031eaab4365801684cad0a"
        "abdeaf863f9e.scope\n"
        "7:rdma:/\n",
        "cri-o",
        "7a1fd6fe8cdfbd44dc78c4cc85dad7031eaab4365801684cad0aabdeaf863f9e",
        "487a0dc6dccaeefbcfedba7a7ce1ca18",
    ),
    # Qard/container-info's fixture: cgroupfs driver, cgroup v1, a best-effort pod.
    "cgroupfs-v1": RealPath(
        "".join(
            f"{n}:{controller}:/kubepods/besteffort/pod74c13223-5a00-11e9-b385-42010a80018d/"
            "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376\n"
            for n, controller in ((11, "devices"), (10, "perf_event"), (9, "memory"))
        ),
        None,
        "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376",
        "74c13223-5a00-11e9-b385-42010a80018d",
    ),
    # Datadog's container-info tests (in opentelemetry-java-instrumentation): Docker, v1.
    "docker-v1": RealPath(
        "13:name=systemd:/docker/3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860\n"
        "12:pids:/docker/3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860\n",
        "docker",
        "3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860",
        None,
    ),
    # NeuVector's cgroup tests: Docker, systemd driver (CentOS).
    "docker-systemd": RealPath(
        "10:devices:/system.slice/docker-9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056"
        "cd4422cf3d.scope\n",
        "docker",
        "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d",
        None,
    ),
    # Elastic Beats' tests: a rootless podman container (its conmon's scope).
    "podman": RealPath(
        "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-conmon-ee059a0975"
        "66fdc5ac9141bfcdfbed0c972163da891de076e0849d7b53597aac.scope\n",
        "podman",
        "ee059a097566fdc5ac9141bfcdfbed0c972163da891de076e0849d7b53597aac",
        None,
    ),
    # NordicHPC/sonar's tests: Slurm on cgroup v2 (a compute node of the Fox cluster) and v1.
    "slurm-v2": RealPath(
        "0::/system.slice/slurmstepd.scope/job_1392969/step_0/user/task_0\n",
        "slurm",
        None,
        None,
        "1392969",
    ),
    "slurm-v1": RealPath(
        "10:devices:/slurm/uid_2101171/job_280678/step_interactive/task_0\n",
        "slurm",
        None,
        None,
        "280678",
    ),
    # A plain host: a login session and a system service.
    "host-session": RealPath("0::/user.slice/user-1000.slice/session-3.scope\n", None, None, None),
    "host-service": RealPath("0::/system.slice/sshd.service\n", None, None, None),
}


def stat_line(pid: int, start: int, name: str = "python") -> str:
    """A ``/proc/<pid>/stat`` line with ``start`` (clock ticks) as field 22."""
    fields = ["S", *["0"] * 18, str(start), *["0"] * 30]
    return f"{pid} ({name}) {' '.join(fields)}\n"


class FakeNode:
    """Builds the files under ``root``; ``proc`` is its procfs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc = root / "proc"
        self.proc.mkdir(parents=True, exist_ok=True)

    def process(
        self,
        pid: int,
        cgroup: str | None,
        *,
        start: int = 1000,
        environ: dict[str, str] | None = None,
    ) -> Path:
        """A process: its stat, cgroup (None: no file) and environment."""
        base = self.proc / str(pid)
        base.mkdir(parents=True, exist_ok=True)
        (base / "stat").write_text(stat_line(pid, start))
        if cgroup is not None:
            (base / "cgroup").write_text(cgroup)
        env = environ or {"PATH": "/usr/bin", "HOME": "/root"}
        (base / "environ").write_bytes(
            b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0"
        )
        return base

    def pod_logs(self, namespace: str, pod: str, uid: str, *containers: str) -> Path:
        """``var/log/pods/<namespace>_<pod>_<uid>/<container>/0.log`` for each container."""
        base = self.root / "var/log/pods" / f"{namespace}_{pod}_{uid}"
        base.mkdir(parents=True, exist_ok=True)
        for container in containers:
            (base / container).mkdir(parents=True, exist_ok=True)
            (base / container / "0.log").write_text("")
        return base

    def container_log_link(
        self, pod: str, namespace: str, container: str, container_id: str
    ) -> None:
        """The kubelet's ``var/log/containers/<pod>_<ns>_<container>-<id>.log`` link."""
        links = self.root / "var/log/containers"
        links.mkdir(parents=True, exist_ok=True)
        (links / f"{pod}_{namespace}_{container}-{container_id}.log").symlink_to(
            f"/var/log/pods/{namespace}_{pod}_x/{container}/0.log"
        )

    def containerd_config(self, container_id: str, annotations: dict[str, str]) -> None:
        """containerd's OCI spec of a CRI container, with the CRI plugin's annotations."""
        base = self.root / "run/containerd/io.containerd.runtime.v2.task/k8s.io" / container_id
        base.mkdir(parents=True, exist_ok=True)
        spec = {"ociVersion": "1.1.0", "process": {"args": ["python"]}, "annotations": annotations}
        (base / "config.json").write_text(json.dumps(spec))

    def crio_config(self, container_id: str, annotations: dict[str, str]) -> None:
        """CRI-O's OCI spec of a container (its userdata directory)."""
        base = self.root / "run/containers/storage/overlay-containers" / container_id / "userdata"
        base.mkdir(parents=True, exist_ok=True)
        (base / "config.json").write_text(json.dumps({"annotations": annotations}))

    def docker_config(self, container_id: str, name: str, labels: dict[str, str]) -> None:
        """Docker's ``config.v2.json`` of a container."""
        base = self.root / "var/lib/docker/containers" / container_id
        base.mkdir(parents=True, exist_ok=True)
        document = {"ID": container_id, "Name": f"/{name}", "Config": {"Labels": labels}}
        (base / "config.v2.json").write_text(json.dumps(document))
