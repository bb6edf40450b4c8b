"""Prepare the bytes of a whole nvidia-smi XML document for the parser.

Used for documents that ``smi_blocks`` cannot split by their lines (no indentation, a
layout that disagrees with the structure, two documents glued together): the children of
``<gpu>`` known to be unread are cut by name, and the indentation between tags goes.
"""

from __future__ import annotations

import re

ROOT_TAG = b"<nvidia_smi_log"

# Children of <gpu> that nothing reads, in the order nvidia-smi writes them. Cutting them
# out before parsing spares expat and the tree builder most of the document: long lists of
# supported clock pairs alone are most of the bytes of many captures. They are looked for in
# order within each <gpu>, so each costs a short search, and one that is absent (older
# schemas) or out of order is simply parsed.
_UNREAD_BLOCKS = tuple(
    (f"<{tag}>".encode(), f"</{tag}>".encode())
    for tag in (
        "inforom_version",
        "gpu_operation_mode",
        "gpu_virtualization_mode",
        "pci_gpu_link_info",
        "clocks_event_reasons_counters",
        "encoder_stats",
        "fbc_stats",
        "supported_gpu_target_temp",
        "module_power_readings",
        "applications_clocks",
        "default_applications_clocks",
        "clock_policy",
        "fabric",
        "supported_clocks",
        "accounted_processes",
    )
)

# Indentation between tags becomes a text or tail string on every element; dropping it
# before parsing makes expat and the tree builder about a third faster. nvidia-smi indents
# with tabs and never puts a tab or line break inside a value, so after the prolog (whose
# DTD needs its white space) tabs and line breaks go in one C pass; captures re-indented
# with spaces take a slower regex.
_LAYOUT = b"\t\r\n"
_SPACES_BETWEEN_TAGS = re.compile(rb"> +<")


def prune(data: bytes) -> bytes:
    """``data`` without the unread children of ``<gpu>`` found by name, and compacted."""
    return compact(_cut_unread(data))


def compact(data: bytes) -> bytes:
    """``data`` without the indentation between tags (the prolog keeps its white space)."""
    root_at = data.find(ROOT_TAG)
    body = data[root_at:].translate(None, _LAYOUT)
    if b">  " in body[:4096]:
        body = _SPACES_BETWEEN_TAGS.sub(b"><", body)
    return data[:root_at] + body


def _cut_unread(data: bytes) -> bytes:
    kept: list[bytes] = []
    keep_from = 0
    position = 0
    while True:
        gpu_end = data.find(b"</gpu>", position)
        if gpu_end < 0:
            break
        for start_tag, end_tag in _UNREAD_BLOCKS:
            start = data.find(start_tag, position, gpu_end)
            if start < 0:
                continue
            end = data.find(end_tag, start, gpu_end)
            if end < 0:
                continue
            kept.append(data[keep_from:start])
            keep_from = position = end + len(end_tag)
        position = gpu_end + len(b"</gpu>")
    if not kept:
        return data
    kept.append(data[keep_from:])
    return b"".join(kept)
