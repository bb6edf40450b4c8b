"""Pods holding a remote node's GPUs, where the exporter's labels name them.

dcgm-exporter labels a GPU's series with the pod the kubelet gave it (``pod``/``namespace``/
``container``, or the old ``pod_name``/``pod_namespace``/``container_name``) but knows no
processes: on such a node the screen lists pods in place of processes.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import DataTable, Static

from gputop.model import Snapshot
from gputop.model.owner import Owner
from gputop.model.units import NA
from gputop.ui.widget_css import css_beside

PodRow = tuple[str, str, str, str]
"""(device, namespace, pod, container)."""

HEADERS = ("GPU", "NAMESPACE", "POD", "CONTAINER")


def _row(device: str, owner: Owner) -> PodRow:
    return (device, owner.namespace or NA, owner.pod or owner.pod_uid or NA, owner.container or NA)


def pod_rows(snapshot: Snapshot) -> list[PodRow]:
    """A row per (GPU or MIG device, pod holding it), in GPU order."""
    rows: list[PodRow] = []
    for gpu in snapshot.gpus:
        rows += [_row(str(gpu.index), owner) for owner in gpu.holders if owner.is_known]
        for mig in gpu.mig_devices:
            where = mig.profile or "MIG"
            gi = "" if mig.gpu_instance_id is None else f" GI {mig.gpu_instance_id}"
            device = f"{gpu.index} {where}{gi}"
            rows += [_row(device, owner) for owner in mig.holders if owner.is_known]
    return rows


class PodsTable(Widget):
    """The pods of the latest snapshot, one row per (device, pod)."""

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, *, id: str | None = None) -> None:
        """An empty table."""
        super().__init__(id=id)
        self._rows: list[PodRow] = []
        self._shown: list[PodRow] | None = None

    def compose(self) -> ComposeResult:
        """A status line and the table."""
        yield Static(id="pods-status")
        yield DataTable[str](id="pods-data", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        """The columns, and the rows given before mounting."""
        self.query_one("#pods-data", DataTable).add_columns(*HEADERS)
        self._apply()

    @property
    def rows(self) -> list[PodRow]:
        """The rows shown."""
        return list(self._rows)

    def show(self, snapshot: Snapshot) -> None:
        """List the pods of ``snapshot`` (nothing is redrawn when they did not change)."""
        self._rows = pod_rows(snapshot)
        if self.is_mounted:
            self._apply()

    def _apply(self) -> None:
        rows = self._rows
        if rows == self._shown:
            return
        self._shown = rows
        table = self.query_one("#pods-data", DataTable)
        table.clear()
        for row in rows:
            # As plain text: a DataTable reads a str cell as markup ("[bold]ns").
            table.add_row(*map(Text, row))
        devices = len({row[0] for row in rows})
        pods = len({(row[1], row[2]) for row in rows})
        status = f"{pods} pod{'s' if pods != 1 else ''} on {devices} device"
        status += "s" if devices != 1 else ""
        self.query_one("#pods-status", Static).update(
            Text(f"{status}  ·  from the exporter's labels")
        )
