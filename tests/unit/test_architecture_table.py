"""ARCHITECTURE.md's table of the parts says what each package may import: the code keeps to
it, and its order is the layers contract's (issue 30 §7: the document cannot drift)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tui" / "gputop"


def table() -> list[tuple[str, str]]:
    """(package, its "may import" cell), in the table's order."""
    rows = []
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `(\w+)/` \|.*\| ([^|]+) \|$", line)
        if match:
            rows.append((match.group(1), match.group(2).strip()))
    return rows


def allowed(rows: list[tuple[str, str]]) -> dict[str, set[str]]:
    """What each package may import, read from the cells: names in backticks, and the
    words "nothing", "everything above" (the rows above it), "and below", "everything"."""
    out: dict[str, set[str]] = {}
    every = {name for name, _ in rows} | {"errors"}
    for position, (name, cell) in enumerate(rows):
        above = {other for other, _ in rows[:position]} | {"errors"}
        named = set(re.findall(r"`(\w+)`", cell.split(";")[0]))
        named |= set(re.findall(r"`(\w+)` in `\w+`", cell))
        if cell.startswith("nothing"):
            out[name] = set()
        elif cell == "everything":
            out[name] = every
        elif cell == "everything above" or "and below" in cell:
            out[name] = above | named
        else:
            out[name] = named
    return out


def only_in(rows: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """Imports a cell grants one module alone ("`sources` in `record_check` alone"): for each
    package, the package it may import there -> that module's name."""
    return {
        name: dict(re.findall(r"`(\w+)` in `(\w+)` alone", cell))
        for name, cell in rows
        if " alone" in cell
    }


def imports(package: str) -> dict[str, set[str]]:
    """The gputop packages each module of ``package`` imports (itself left out)."""
    found: dict[str, set[str]] = {}
    for path in (PACKAGE / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "gputop" and len(parts) > 1 and parts[1] != package:
                    found.setdefault(parts[1], set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_every_package_imports_only_what_the_table_says() -> None:
    rows = table()
    assert [name for name, _ in rows][:3] == ["model", "sources", "history"]
    may = allowed(rows)
    for name, _ in rows:
        wrong = {other: where for other, where in imports(name).items() if other not in may[name]}
        assert not wrong, f"{name}/ imports {wrong}, which ARCHITECTURE.md does not allow"


def test_what_one_module_alone_may_import_no_other_does() -> None:
    rows = table()
    granted = only_in(rows)
    assert granted == {
        "sinks": {"sources": "record_check"},
        "web": {"sources": "snapshot_publisher"},
    }
    for name, alone in granted.items():
        for other, module in alone.items():
            where = imports(name).get(other, set())
            assert where == {f"{name}/{module}.py"}, f"{name}/ imports {other} in {where}"


def test_the_tables_order_is_the_layers_contracts() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    order = [part.strip().removeprefix("gputop.") for layer in layers for part in layer.split("|")]
    rows = [name for name, _ in table()]
    # The table lists the parts from the bottom up; the contract from the top down. Within
    # one layer (insight | sinks | history | ledger) the order is free.
    rank = {name: index for index, name in enumerate(reversed(layers))}
    layer_of = {
        part.strip().removeprefix("gputop."): rank[layer]
        for layer in layers
        for part in layer.split("|")
    }
    assert sorted(rows) == sorted(order)
    assert [layer_of[name] for name in rows] == sorted(layer_of[name] for name in rows)
