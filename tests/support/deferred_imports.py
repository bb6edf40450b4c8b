"""gputop's imports made inside a function, found by walking its syntax trees
(``tests/unit/test_deferred_imports.py``).

A command's module is imported only when that command runs: ``cli/main.py`` names each in one
table (``COMMANDS``, ``MODES``) and imports it through ``importlib`` then, so a command module
imports what it uses at its top. An import inside a function is the exception and says why on
the comment line right above it (or above the run of imports it is the first of)::

    # Deferred: a cycle (gputop.ui.screens.main imports this module).
    from gputop.ui.screens.main import MainScreen

``# Deferred:`` is followed by the reason: a cycle, or what loading it at the top would cost
the start of a command that does not use it (measured: ``benchmarks/README.md``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MARKER = "# Deferred:"
"""How the comment that gives a function-level import its reason begins."""


@dataclass(frozen=True, order=True)
class DeferredImport:
    """One import statement inside a function, and the reason written above it (or None)."""

    path: str
    line: int
    reason: str | None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason or 'no reason'}"


def _imports_in_functions(tree: ast.Module) -> Iterator[tuple[ast.stmt, list[ast.stmt]]]:
    """Each import statement in a function's body (at any depth), with the statement list it
    stands in (to find the first import of its run)."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(inner, field, None)
                if not isinstance(block, list):
                    continue
                for statement in block:
                    if isinstance(statement, (ast.Import, ast.ImportFrom)):
                        yield statement, block


def _reason(statement: ast.stmt, block: list[ast.stmt], lines: list[str]) -> str | None:
    """The reason above the run of imports ``statement`` belongs to, if one is written."""
    index = block.index(statement)
    while (
        index > 0
        and isinstance(block[index - 1], (ast.Import, ast.ImportFrom))
        and block[index - 1].end_lineno == block[index].lineno - 1
    ):
        index -= 1
    above = lines[block[index].lineno - 2].strip() if block[index].lineno > 1 else ""
    if not above.startswith(MARKER):
        return None
    reason = above.removeprefix(MARKER).strip()
    return reason or None


def deferred_imports(root: Path) -> list[DeferredImport]:
    """Every import inside a function under ``root``, with its reason (None when missing)."""
    found: set[DeferredImport] = set()
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for statement, block in _imports_in_functions(ast.parse(text)):
            name = str(path.relative_to(root.parent))
            found.add(DeferredImport(name, statement.lineno, _reason(statement, block, lines)))
    return sorted(found)
