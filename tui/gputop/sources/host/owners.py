"""Which container, pod or Slurm job a process belongs to, from files on the node.

For one PID (as the procfs read here numbers it):

1. ``<proc>/<pid>/cgroup``: the runtime, container id, pod UID or Slurm job
   (:mod:`gputop.sources.host.cgroup`);
2. ``<proc>/<pid>/environ``: ``SLURM_JOB_ID`` when the cgroup names no job (another user's
   environment needs root);
3. the pod's namespace and name from the kubelet's log directories,
   ``<root>/var/log/pods/<namespace>_<pod>_<uid>/<container>/`` (no API access needed);
4. the container's name from what the runtime keeps per container: containerd's and CRI-O's
   OCI ``config.json`` annotations, Docker's ``config.v2.json``; else the kubelet's
   ``/var/log/containers/<pod>_<namespace>_<container>-<id>.log`` links, else the pod's only
   container directory.

Every step is optional and fails quietly (a missing, unreadable or odd file is "unknown").
Answers are cached per (PID, start time): a process is read once, and a reused PID, which
starts at another time, is read again. The directory indexes are re-read only when a lookup
misses and the directory changed (its mtime), so a new pod is found at its first process.
Not thread-safe: one source calls it from its polling thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.model import Owner
from gputop.sources.host.cgroup import CgroupFacts, parse_cgroup
from gputop.sources.host.procinfo import read_start_ticks

MAX_SMALL_FILE = 64 * 1024
"""Bytes read of a cgroup file (a few hundred in practice)."""
MAX_ENVIRON = 256 * 1024
MAX_CONFIG = 1024 * 1024
"""An OCI config.json is tens of KB; more is not one."""

_SLURM_JOB = b"SLURM_JOB_ID="

_CONTAINERD_TASKS = "run/containerd/io.containerd.runtime.v2.task"
_CONTAINERD_NAMESPACES = ("k8s.io", "moby", "default")
_CRIO_STORAGE = ("run/containers/storage", "var/lib/containers/storage")
_DOCKER_CONTAINERS = "var/lib/docker/containers"
_POD_LOGS = "var/log/pods"
_CONTAINER_LOGS = "var/log/containers"

_NAME_KEYS = {
    # containerd's CRI plugin
    "io.kubernetes.cri.container-name": "container",
    "io.kubernetes.cri.sandbox-name": "pod",
    "io.kubernetes.cri.sandbox-namespace": "namespace",
    "io.kubernetes.cri.sandbox-uid": "pod_uid",
    # CRI-O, and Docker's labels under dockershim / cri-dockerd
    "io.kubernetes.container.name": "container",
    "io.kubernetes.pod.name": "pod",
    "io.kubernetes.pod.namespace": "namespace",
    "io.kubernetes.pod.uid": "pod_uid",
}


def read_bytes(path: str, limit: int = MAX_SMALL_FILE) -> bytes | None:
    """Up to ``limit`` bytes of a regular file; None when it cannot be read (gone, no
    permission, a directory, a FIFO or device, ...)."""
    try:
        # Opened without waiting (a FIFO's open waits for a writer) and read only if regular
        # (procfs files are): a FIFO, socket or device under a runtime's directory or a
        # mounted procfs is not the file it stands in for.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read(limit)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def slurm_job_from_environ(data: bytes) -> str | None:
    """``SLURM_JOB_ID`` of a ``/proc/PID/environ`` (NUL-separated ``KEY=value``)."""
    for entry in data.split(b"\0"):
        if entry.startswith(_SLURM_JOB):
            value = entry[len(_SLURM_JOB) :].decode(errors="replace").strip()
            return value if value.isdigit() else None
    return None


@dataclass(frozen=True, slots=True)
class _Names:
    """What a runtime's per-container file names (each None when it does not)."""

    container: str | None = None
    pod: str | None = None
    namespace: str | None = None
    pod_uid: str | None = None


def _names_from_mapping(mapping: Any, container: str | None = None) -> _Names:
    found: dict[str, str] = {}
    if isinstance(mapping, dict):
        for key, field in _NAME_KEYS.items():
            value = mapping.get(key)
            if isinstance(value, str) and value and field not in found:
                found[field] = value
    return _Names(
        found.get("container", container),
        found.get("pod"),
        found.get("namespace"),
        found.get("pod_uid"),
    )


def _load_json(path: str) -> Any:
    data = read_bytes(path, MAX_CONFIG)
    if data is None:
        return None
    # Deferred: a containerised process's runtime config only (test_live_imports).
    import json

    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the stack
        return None


class _DirIndex:
    """The entries of one directory, re-listed only when it changed since the last listing."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._mtime: int | None = None
        self.names: list[str] = []

    def refresh(self) -> bool:
        """List the directory again if its mtime moved; True if it did."""
        try:
            mtime = os.stat(self._path).st_mtime_ns
        except OSError:
            self.names = []
            self._mtime = None
            return False
        if mtime == self._mtime:
            return False
        try:
            self.names = os.listdir(self._path)
        except OSError:
            self.names = []
        self._mtime = mtime
        return True


class OwnerLookup:
    """The :class:`Owner` of a PID, from its procfs and the node's files (see the module).

    Args:
        proc_root: the procfs the PIDs asked about are in (the host's, for driver PIDs).
        root: where the node's file system is (``/``; ``/host`` for a DaemonSet that mounts
            the host's root there): ``var/log/pods``, the runtimes' directories.
    """

    def __init__(self, *, proc_root: Path = Path("/proc"), root: Path = Path("/")) -> None:
        self._proc = os.path.join(proc_root, "")
        self._root = root
        self._cache: dict[int, tuple[int, Owner | None]] = {}
        self._pods = _DirIndex(os.path.join(root, _POD_LOGS))
        self._pod_dirs: dict[str, tuple[str, str, str]] = {}
        """Pod UID -> (namespace, pod, its log directory)."""
        self._links = _DirIndex(os.path.join(root, _CONTAINER_LOGS))
        self._link_names: dict[str, str] = {}
        """Container id -> container name, from /var/log/containers."""
        self._containers: dict[str, _Names] = {}

    def owner(self, pid: int, start: int | None = None) -> Owner | None:
        """The owner of ``pid``; None when nothing is known of it (a plain host process).

        ``start`` is its start time in clock ticks if the caller has read it (saves a read);
        a cached answer for another start time is of an earlier process with that PID.
        """
        if start is None:
            start = read_start_ticks(f"{self._proc}{pid}/stat")
            if start is None:
                self._cache.pop(pid, None)
                return None  # gone
        cached = self._cache.get(pid)
        if cached is not None and cached[0] == start:
            return cached[1]
        owner = self._read(pid)
        if read_start_ticks(f"{self._proc}{pid}/stat") != start:
            # Exited (or replaced) while being read: what was read may be another's.
            self._cache.pop(pid, None)
            return None
        self._cache[pid] = (start, owner)
        return owner

    def keep_only(self, pids: Iterable[int]) -> None:
        """Forget PIDs not among ``pids`` (exited)."""
        keep = set(pids)
        for pid in [pid for pid in self._cache if pid not in keep]:
            del self._cache[pid]

    def _read(self, pid: int) -> Owner | None:
        base = f"{self._proc}{pid}/"
        data = read_bytes(base + "cgroup")
        facts = parse_cgroup(data.decode(errors="replace")) if data is not None else CgroupFacts()
        job = facts.slurm_job
        if job is None:
            environ = read_bytes(base + "environ", MAX_ENVIRON)
            job = slurm_job_from_environ(environ) if environ is not None else None
        if facts.weight == 0 and job is None:
            return None
        names = self._container_names(facts) if facts.container_id is not None else _Names()
        uid = facts.pod_uid or names.pod_uid
        namespace, pod, container = names.namespace, names.pod, names.container
        if uid is not None:
            logged = self._pod_log(uid)
            if logged is not None:
                namespace = namespace or logged[0]
                pod = pod or logged[1]
                if container is None:
                    container = self._container_from_logs(facts.container_id, logged[2])
        runtime = facts.runtime
        if runtime is None and facts.container_id is not None:
            runtime = self._runtime_by_files(facts.container_id)
        return Owner(
            runtime=runtime or ("slurm" if job is not None else None),
            container_id=facts.container_id,
            container=container,
            pod=pod,
            namespace=namespace,
            pod_uid=uid,
            slurm_job=job,
        )

    def _pod_log(self, uid: str) -> tuple[str, str, str] | None:
        found = self._pod_dirs.get(uid)
        if found is None and self._pods.refresh():
            self._pod_dirs = {}
            for name in self._pods.names:
                parts = name.split("_")
                # Neither namespaces nor pod names may hold "_" (DNS labels and subdomains).
                if len(parts) == 3 and all(parts):
                    self._pod_dirs[parts[2]] = (parts[0], parts[1], name)
            found = self._pod_dirs.get(uid)
        return found

    def _container_from_logs(self, container_id: str | None, pod_dir: str) -> str | None:
        """The name by the kubelet's link for the container, else the pod's only container."""
        if container_id is not None:
            name = self._link_names.get(container_id)
            if name is None and self._links.refresh():
                self._link_names = {}
                for link in self._links.names:
                    # <pod>_<namespace>_<container>-<64 hex id>.log
                    stem, _, _ = link.rpartition(".log")
                    head, _, cid = stem.rpartition("-")
                    parts = head.split("_")
                    if len(cid) == 64 and len(parts) == 3:
                        self._link_names[cid] = parts[2]
                name = self._link_names.get(container_id)
            if name is not None:
                return name
        try:
            entries = [
                entry.name
                for entry in os.scandir(os.path.join(self._root, _POD_LOGS, pod_dir))
                if entry.is_dir()
            ]
        except OSError:
            return None
        return entries[0] if len(entries) == 1 else None

    def _container_names(self, facts: CgroupFacts) -> _Names:
        """What the runtime's own files say of the container (cached per container id)."""
        cid = facts.container_id
        assert cid is not None
        known = self._containers.get(cid)
        if known is not None:
            return known
        names = _Names()
        for path, kind in self._runtime_files(cid, facts.runtime):
            document = _load_json(path)
            if not isinstance(document, dict):
                continue
            if kind == "docker":
                config = document.get("Config")
                labels = config.get("Labels") if isinstance(config, dict) else None
                raw = document.get("Name")
                name = raw.lstrip("/") if isinstance(raw, str) and raw else None
                names = _names_from_mapping(labels, container=name)
            else:
                names = _names_from_mapping(document.get("annotations"))
            break
        self._containers[cid] = names
        return names

    def _runtime_files(self, cid: str, runtime: str | None) -> list[tuple[str, str]]:
        root = self._root
        files: list[tuple[str, str]] = []
        if runtime in (None, "containerd"):
            files.extend(
                (os.path.join(root, _CONTAINERD_TASKS, ns, cid, "config.json"), "oci")
                for ns in _CONTAINERD_NAMESPACES
            )
        if runtime in (None, "cri-o", "podman"):
            files.extend(
                (
                    os.path.join(root, storage, "overlay-containers", cid, "userdata/config.json"),
                    "oci",
                )
                for storage in _CRIO_STORAGE
            )
        if runtime in (None, "docker"):
            files.append((os.path.join(root, _DOCKER_CONTAINERS, cid, "config.v2.json"), "docker"))
        return files

    def _runtime_by_files(self, cid: str) -> str | None:
        """The runtime of a bare container id (cgroupfs paths do not say): whose directory
        holds it."""
        if os.path.isdir(os.path.join(self._root, _DOCKER_CONTAINERS, cid)):
            return "docker"
        for ns in _CONTAINERD_NAMESPACES:
            if os.path.isdir(os.path.join(self._root, _CONTAINERD_TASKS, ns, cid)):
                return "containerd"
        for storage in _CRIO_STORAGE:
            if os.path.isdir(os.path.join(self._root, storage, "overlay-containers", cid)):
                return "cri-o"
        return None


HOST_ROOT_VARIABLE = "GPUTOP_HOST_ROOT"
"""Where the node's root file system is mounted, when gputop runs in a container."""


def node_root(environ: Mapping[str, str], host_proc_root: Path | None) -> Path:
    """Where to find the node's ``/var/log/pods`` and runtime directories.

    ``$GPUTOP_HOST_ROOT`` when set; else the parent of a host procfs mounted at
    ``<dir>/proc`` (``/host/proc`` -> ``/host``) when that holds a ``var``; else ``/``.
    """
    given = environ.get(HOST_ROOT_VARIABLE)
    if given:
        return Path(given)
    if host_proc_root is not None and (host_proc_root.parent / "var").is_dir():
        return host_proc_root.parent
    return Path("/")


def open_owner_lookup(environ: Mapping[str, str], host_proc_root: Path | None) -> OwnerLookup:
    """The lookup for the live source: driver PIDs are the host's, so the host procfs when
    one is mounted, else ours (where only our namespace's processes resolve)."""
    return OwnerLookup(
        proc_root=host_proc_root if host_proc_root is not None else Path("/proc"),
        root=node_root(environ, host_proc_root),
    )
