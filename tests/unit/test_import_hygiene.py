"""The one-way layering holds at run time: headless code never loads Textual.

The static rules (layers, who may import pynvml, the UI never builds a source) are
import-linter contracts in pyproject.toml, run by scripts/test; these tests cover what a
contract cannot say: what a real import loads, import cycles, and Textual's private API.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tui" / "gputop"

HEADLESS_MODULES = [
    "gputop.model",
    "gputop.model.units",
    "gputop.model.mig_profiles",
    "gputop.sources.smi.xml",
    "gputop.sources.smi.recording",
    "gputop.cli.replay",
    "gputop.cli.main",
    "gputop.pipeline.core",
    "gputop.pipeline.loop",
    "gputop.history.store",
    "gputop.sources.playback.replay",
    "gputop.pipeline.gpu_select",
    "gputop.sinks.smi_xml",
    "gputop.sinks.csv_log",
    "gputop.sinks.json",
    "gputop.sinks.summary",
    "gputop.insight.diagnosis",
    "gputop.insight.report",
    "gputop.cli.report",
    "gputop.cli.live",
    "gputop.cli.sinks",
    "gputop.cli.export",
    "gputop.web.metrics_server",
    "gputop.web.config",
    "gputop.ledger.prometheus",
]


@pytest.mark.parametrize("module", HEADLESS_MODULES)
def test_headless_module_does_not_load_textual(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = ('textual', 'textual_serve', 'rich', 'pynvml')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles_even_through_function_level_imports() -> None:
    graph = grimp.build_graph("gputop")
    edges = {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_textual_private_api_is_used_in_the_compat_module_only() -> None:
    users = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "textual._" in path.read_text()
    )
    assert users == ["ui/compat.py"]
