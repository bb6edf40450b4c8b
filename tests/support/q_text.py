"""Reading real `nvidia-smi -q` text and gputop's `--replay --json` of it, for the tests
that check a capture's values against the file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support.command import gputop


def replay_json(path: Path, *args: str) -> dict[str, Any]:
    """``gputop --replay PATH --json ARGS``'s snapshot, the command having succeeded."""
    result = gputop("--replay", path, "--json", *args)
    assert result.returncode == 0, result.stderr
    snapshot: dict[str, Any] = json.loads(result.stdout)
    return snapshot


def q_blocks(text: str) -> list[str]:
    """The GPU blocks of a `nvidia-smi -q` text, in the file's order."""
    return re.split(r"^(?=GPU [0-9A-F]{8}:)", text, flags=re.MULTILINE)[1:]


def q_value(block: str, label: str) -> str:
    """The value after ``label :`` in a block (the first such line)."""
    found = re.search(rf"^\s*{re.escape(label)}\s+: (.*)$", block, re.MULTILINE)
    assert found is not None, label
    return found.group(1).strip()
