"""TCSS lives in ``.tcss`` files beside the code, never in Python strings."""

from __future__ import annotations

import ast
from pathlib import Path

from gputop.ui.widget_css import css_beside

PACKAGE = Path(__file__).resolve().parents[2] / "tui" / "gputop"


def css_strings(source: str) -> list[str]:
    """Names of class attributes ``CSS``/``DEFAULT_CSS`` assigned a string literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign | ast.AnnAssign)
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                ):
                    targets = (
                        statement.targets
                        if isinstance(statement, ast.Assign)
                        else [statement.target]
                    )
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                    found += [f"{node.name}.{n}" for n in names if n in ("CSS", "DEFAULT_CSS")]
    return found


def test_the_guard_sees_css_in_a_string() -> None:
    assert css_strings('class W:\n    DEFAULT_CSS = """W { height: 1; }"""\n') == ["W.DEFAULT_CSS"]
    assert css_strings("class W:\n    DEFAULT_CSS = css_beside(__file__)\n") == []


def test_no_module_keeps_css_in_a_string() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := css_strings(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_css_beside_reads_the_file_named_like_the_module(tmp_path: Path) -> None:
    (tmp_path / "gauge.tcss").write_text("Gauge { height: 1; }\n", encoding="utf-8")
    assert css_beside(str(tmp_path / "gauge.py")) == "Gauge { height: 1; }\n"
