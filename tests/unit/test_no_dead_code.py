"""No function, method or class in the package that nothing in the package names (issue 30 §6).

Code only the tests call belongs in ``tests/support`` (``support.shortcuts``), and code
nothing calls goes. A definition counts as used when its name occurs anywhere else in
``tui/gputop`` (a call, an attribute, a string handed to ``getattr``, an ``__all__``) or in
``pyproject.toml`` (the console script); what is called by name from outside is left out:
dunders, Textual's handlers (``on_*``, ``@on(...)``, ``action_*``, ``watch_*``,
``compute_*``, ``validate_*``), ``http.server``'s ``do_*``, and a method that overrides
one of a base class outside the package.

It counts names, so it misses a definition whose name is also defined or mentioned
elsewhere: a protocol's method and its implementations name each other, and a comment or a
docstring names what it speaks of. What it catches is the common case, a helper left behind.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections import Counter
from pathlib import Path

import pytest

from support.command import ROOT

PACKAGE = ROOT / "tui" / "gputop"

CALLED_BY_NAME = re.compile(
    r"^(__\w+__|on_\w+|action_\w+|watch_\w+|compute_\w+|validate_\w+|do_[A-Z]+)$"
)
"""Names Textual, ``http.server`` or Python call by themselves."""

READ_BY_TESTS_ONLY = {
    "round_trips": "the Prometheus client's count of HTTP requests: what the fleet's cost "
    "tests count (one round trip per metric, not per node)",
    "cached_renders": "how many renders DataTable holds: read through Textual's private "
    "caches, so it stays beside the patch that bounds them (compat, issue 30 §1)",
}
"""Instrumentation kept in the package on purpose, and why."""


def _sources(package: Path) -> dict[Path, str]:
    return {
        path: path.read_text()
        for path in sorted(package.rglob("*.py"))
        if not path.name.endswith(("_pb2.py", "_pb2_grpc.py"))
    }


def _handler(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated with Textual's ``@on(...)``."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id == "on":
            return True
    return False


def _overrides(module: str, owner: str, name: str) -> bool:
    """Whether ``owner.name`` in ``module`` overrides an attribute of a base class."""
    cls = getattr(importlib.import_module(module), owner, None)
    if not isinstance(cls, type):
        return False
    return any(name in vars(base) for base in cls.__mro__[1:])


def unnamed_definitions(package: Path, import_root: Path, also: str) -> set[str]:
    """The names of the definitions in ``package`` (importable from ``import_root``) that
    occur nowhere else in it nor in the text ``also``."""
    sources = _sources(package)
    words: Counter[str] = Counter(re.findall(r"\w+", also))
    for text in sources.values():
        words.update(re.findall(r"\w+", text))
    found = set()
    for path, text in sources.items():
        module = ".".join(path.relative_to(import_root).with_suffix("").parts)
        for owner, node in _definitions(ast.parse(text)):
            name = node.name
            if CALLED_BY_NAME.match(name) or words[name] > 1:
                continue
            if not isinstance(node, ast.ClassDef) and _handler(node):
                continue
            if owner is not None and _overrides(module, owner, name):
                continue
            found.add(name)
    return found


def _definitions(
    tree: ast.Module,
) -> list[tuple[str | None, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]]:
    """Module-level functions and classes, and the methods of module-level classes."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    found: list[tuple[str | None, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]] = []
    for node in tree.body:
        if isinstance(node, kinds):
            found.append((None, node))
        if isinstance(node, ast.ClassDef):
            found += [(node.name, item) for item in node.body if isinstance(item, kinds)]
    return found


def test_everything_the_package_defines_is_named_in_it() -> None:
    found = unnamed_definitions(PACKAGE, ROOT / "tui", (ROOT / "pyproject.toml").read_text())
    unused = sorted(found - set(READ_BY_TESTS_ONLY))
    assert not unused, (
        f"named nowhere else in tui/gputop: {unused}; delete them, or move what only the "
        "tests use to tests/support/shortcuts.py"
    )
    # An exception that the package now uses is no longer one.
    assert found == set(READ_BY_TESTS_ONLY)


MODULE = """\
from http.server import BaseHTTPRequestHandler


def on(*_: object) -> object:
    return lambda handler: handler


def used() -> None: ...


def forgotten() -> None:
    used()


def entry() -> None: ...


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None: ...

    def do_GET(self) -> None: ...

    def on_mount(self) -> None: ...

    @on("Input.Submitted")
    def _submitted(self) -> None: ...

    def stale(self) -> None: ...
"""


def test_the_scan_finds_what_nothing_names_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "deadcheck_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Named once each: a helper, a class nothing uses and a method nothing calls. An
    # override of the standard library's, a handler by its name or its decorator, and what
    # the project file names (a console script) are used.
    found = unnamed_definitions(package, tmp_path, 'deadcheck = "deadcheck_pkg.mod:entry"')
    assert found == {"forgotten", "Handler", "stale"}
