"""Start-up laziness goes through one place (issue 30 §2): ``cli/main.py``'s table of commands
imports a command's module when that command runs, and an import inside a function anywhere
else in ``tui/gputop`` says on the line above it why it is not at the top (a cycle, or what it
would cost a start that does not use it). ``tests/unit/test_live_imports.py`` holds what the
live TUI must not load; this holds that each exception to "import at the top" is a choice.
"""

from __future__ import annotations

import ast
import importlib
import textwrap
from pathlib import Path

from gputop.cli import main as cli_main
from support.deferred_imports import deferred_imports

PACKAGE = Path(__file__).resolve().parents[2] / "tui" / "gputop"


def test_every_import_inside_a_function_says_why() -> None:
    unexplained = [str(found) for found in deferred_imports(PACKAGE) if found.reason is None]
    assert unexplained == []


def test_the_walk_sees_an_import_without_a_reason(tmp_path: Path) -> None:
    """Guards the test above: a bare import in a function, in a nested block or after an
    explained run, is found; an explained run and a top-level import pass."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text(
        textwrap.dedent(
            """\
            import os


            def explained():
                # Deferred: a cycle.
                import json
                import csv
                return json, csv


            def bare():
                if os.sep:
                    import gzip
                return gzip


            def after():
                # Deferred: a cycle.
                import json

                import csv
                return json, csv
            """
        )
    )
    found = {(item.line, item.reason) for item in deferred_imports(package)}
    assert found == {(6, "a cycle."), (7, "a cycle."), (13, None), (19, "a cycle."), (21, None)}


def test_the_commands_table_names_modules_that_define_their_entry() -> None:
    """Each command and mode of ``cli/main.py`` is a module and a function in it, imported only
    when it runs; so ``main.py`` itself imports none of them inside a function."""
    for module, function in (*cli_main.COMMANDS.values(), *cli_main.MODES.values()):
        assert callable(getattr(importlib.import_module(module), function))
    tree = ast.parse((PACKAGE / "cli" / "main.py").read_text(encoding="utf-8"))
    in_functions = [
        node.lineno
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    assert in_functions == []
