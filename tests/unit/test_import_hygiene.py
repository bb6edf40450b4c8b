"""The one-way layering holds at run time: headless code never loads Textual.

The static rules (layers, who may import pynvml, the UI never builds a source) are
import-linter contracts in pyproject.toml, run by scripts/test; these tests cover what a
contract cannot say: what a real import loads, import cycles, and the private API of
Textual, textual-serve, Rich and plotext.
"""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grimp
import pytest

from support.private_api import reaches

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
    "gputop.web.snapshot_publisher",
    "gputop.pipeline.serve_sampler",
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


PRIVATE_API_HOMES = frozenset({"ui/compat.py", "web/serve_compat.py"})
"""The modules that may reach Textual's (``compat``) and textual-serve's (``serve_compat``)
private API; ARCHITECTURE.md says so."""

OURS_TOO = frozenset({("ui/widgets/gpu_panel.py", "_strips")})
"""(file, name): a private name that Textual or textual-serve defines too, reached in that
file on an object of gputop's own: ``panel._strips`` is ``GpuPanel``'s own line cache."""


def test_textual_private_api_is_reached_in_the_compat_modules_only() -> None:
    found = [str(reach) for reach in reaches(PACKAGE, PRIVATE_API_HOMES, OURS_TOO)]
    assert found == []


PLOTEXT_HOME = frozenset({"plotext_compat.py"})
"""The one module that may reach plotext's private API (a figure of a chart's own); it
imports nothing of Rich's."""


def test_rich_is_reached_through_its_public_api_and_plotext_in_its_home_only() -> None:
    """The pen reads a style through Rich's public properties; textual-plotext's widget is
    used as it is; plotext's figure class is reached in ``plotext_compat`` alone (one walk
    for the three: each walk parses every file of gputop's again)."""
    packages = ("rich", "plotext", "textual_plotext")
    found = [str(reach) for reach in reaches(PACKAGE, PLOTEXT_HOME, frozenset(), packages)]
    assert found == []


def _syntax_trees_alive() -> int:
    return sum(isinstance(o, ast.Module) for o in gc.get_objects())


@contextmanager
def importable_package(tmp_path: Path, name: str, files: dict[str, str]) -> Iterator[Path]:
    """A package ``name`` of ``files`` that the walk can import, forgotten afterwards."""
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file, text in files.items():
        (package / file).write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        yield package
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.split(".")[0] == name]:
            del sys.modules[module]


def test_the_private_api_walk_finds_each_kind_of_reach(tmp_path: Path) -> None:
    """A package with one reach of each kind, and the same names where they are gputop's own."""
    reaching = (
        "from textual._compositor import Compositor\n"
        "from textual.widgets import DataTable\n"
        "from textual.app import App\n"
        "class Table(DataTable[str]):\n"
        "    def _render_cell(self, *args):\n"
        "        return super()._render_cell(*args)\n"
        "    def count(self) -> int:\n"
        "        return self._update_count\n"
        "def toast(app: App[None]) -> None:\n"
        "    app._unnotify(None)\n"
        "    getattr(app, '_unnotify')(None)\n"
    )
    own = (
        "from textual.widget import Widget\n"
        "class Panel(Widget):\n"
        "    def _mine(self) -> int:\n"
        "        self._drawn = 1\n"
        "        return self._drawn\n"
        "class Plain:\n"
        "    def __init__(self) -> None:\n"
        "        self._update_count = 0\n"
    )
    files = {"reaching.py": reaching, "own.py": own}
    with importable_package(tmp_path, "walked", files) as package:
        trees_before = _syntax_trees_alive()
        found = [str(r) for r in sorted(reaches(package, frozenset(), frozenset()))]
        # The walk's trees go with it: kept, the real walk's 840,000 objects rode in the
        # pytest worker to its end, and each full collection walked them again.
        assert _syntax_trees_alive() <= trees_before
    assert found == [
        "reaching.py:1: from textual._compositor import ...",
        "reaching.py:5: Table._render_cell overrides theirs",
        "reaching.py:6: super()._render_cell (Table)",
        "reaching.py:8: self._update_count (Table)",
        "reaching.py:10: app._unnotify",
        "reaching.py:11: app._unnotify",
    ]


def test_the_walk_finds_rich_styles_handed_out_by_textual_and_plotext_figures(
    tmp_path: Path,
) -> None:
    """A file that imports only Textual still reaches Rich through a strip's styles."""
    styles = (
        "from textual.strip import Strip\n"
        "def linked(strip: Strip) -> bool:\n"
        "    return any(s.style is not None and s.style._link for s in strip)\n"
    )
    figures = (
        "from plotext._figure import _figure_class\n"
        "def figure() -> object:\n"
        "    made = _figure_class()\n"
        "    made._limit_size(False, False)\n"
        "    return made\n"
    )
    files = {"styles.py": styles, "figures.py": figures}
    with importable_package(tmp_path, "handed", files) as package:
        rich = [str(r) for r in sorted(reaches(package, frozenset(), frozenset(), ("rich",)))]
        plotext = reaches(package, frozenset(), frozenset(), ("plotext",))
        found = [str(r) for r in sorted(plotext)]
    assert rich == ["styles.py:3: s.style._link"]
    assert found == [
        "figures.py:1: from plotext._figure import ...",
        "figures.py:4: made._limit_size",
    ]
