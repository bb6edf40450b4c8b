"""Strings an attacker puts in names (a GPU's in a log, a process's command line, a pod's
Docker label, a node's ``Hostname``), snapshots full of them, and the test that a view's
output obeys none of them (issue 26 §1)."""

from __future__ import annotations

import dataclasses
import re

from hypothesis import strategies as st

from gputop.model import Owner, Snapshot

UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
"""A character a terminal would obey (a newline between lines is the view's own)."""

TITLE = "\x1b]0;pwned\x07"
"""Sets the terminal's (or tab's) title."""
WIPE = "\x1b[2J"
CSI8 = "\x9b2J"
"""The 8-bit CSI, valid in XML, then "erase the screen"."""
RLO = "\u202e"
"""Right-to-left override: what follows reads backwards."""
LINK = "[link=https://evil.example]x[/]"
BOLD = "[bold red]"

GPU_NAME = f"{BOLD}A100{TITLE}{WIPE}"
PROCESS = f"py{LINK}{CSI8}{RLO}gpj.exe"
USER = "\x1b[31mroot"
POD = "web-0\n  0  NVIDIA H100   100%   forged line"
NAMESPACE = f"{BOLD}ns"
CONTAINER = "c\x1b]8;;http://evil.example\x07"
JOB = "\x9b1m42"
HOST = f"node{TITLE}\nforged"

EVIL = Owner(
    runtime="docker",
    container_id="ab" * 32,
    container=CONTAINER,
    pod=POD,
    namespace=NAMESPACE,
    pod_uid="5d1c2b1e-8a8b-4a0e-9d3c-1f2e3d4c5b6a",
)

MARKUP_SHOWN = (BOLD + "A100", LINK)
"""What must be seen as written wherever the GPU's and the process's names are shown."""


def hostile(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with its host, versions, GPU names and its processes' names, command
    lines, users and owners (and its GPUs' holders) the strings above."""
    gpus = []
    for gpu in snapshot.gpus:
        processes = tuple(
            dataclasses.replace(
                process, name=PROCESS, command=f"{PROCESS} --lr 3e-4", user=USER, owner=EVIL
            )
            for process in gpu.processes
        )
        gpus.append(
            dataclasses.replace(
                gpu,
                name=GPU_NAME,
                serial=f"S{WIPE}",
                performance_state=f"P0{CSI8}",
                processes=processes,
                holders=(EVIL,),
            )
        )
    return dataclasses.replace(
        snapshot,
        gpus=tuple(gpus),
        host=HOST,
        driver_version=f"535{TITLE}",
        cuda_version=f"12{RLO}",
    )


def obeyed(text: str) -> list[str]:
    """The characters in ``text`` a terminal would obey (empty when it is safe)."""
    return sorted({f"U+{ord(char):04X}" for char in UNSAFE.findall(text)})


HOSTILE_TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
        st.sampled_from(["\x1b", "\x9b", "\x07", "\n", "\r", RLO, "\u2066", "[", "]", "/"]),
    ),
    min_size=1,
    max_size=24,
).map(lambda text: text + LINK)
"""Names hypothesis makes: any text, heavy on controls and markup, always with a link."""
