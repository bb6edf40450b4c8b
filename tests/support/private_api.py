"""Where gputop's code reaches Textual's or textual-serve's private API (or any other
package's: Rich's and plotext's are walked too), found by walking its syntax trees
(``tests/unit/test_import_hygiene.py``).

A private name is one with a single leading underscore. What counts as a reach (said of
Textual and textual-serve, the default packages; the same for any others walked):

* an import of a private module of either package (``textual._compositor``), or of a private
  name from one of their modules (``from textual.app import _x``);
* inside a class with a Textual or textual-serve class among its ancestors (found by importing
  the module and reading the class's MRO): ``self._x``, ``cls._x`` or ``super()._x``, a
  method, or a class attribute, where ``_x`` is a name one of those ancestors defines (its
  class body, or a ``self._x = ...`` in its methods): reading, writing or overriding it;
* anywhere else, ``anything._x`` (and ``getattr``/``setattr``/``hasattr`` with the name
  written out) where ``_x`` is a private name that Textual or textual-serve defines and that
  gputop itself never defines, so that it can only be theirs; a name both define is judged
  by the allowlist the test holds (each entry a file and a name, with the reason).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

THIRD_PARTY = ("textual", "textual_serve")
"""The packages whose private API is held to the compat modules (by default; ``reaches``
walks for any packages it is given: Rich's and plotext's have their own test)."""

HANDING_OUT = ("textual", "textual_serve", "textual_plotext", "rich", "plotext")
"""Packages whose objects hand out others' (a Textual strip's segments carry Rich styles): a
file that imports any of them is walked, whichever packages' private names are looked for."""


def is_private(name: str) -> bool:
    """``_x``, not ``__x__`` (nor a name-mangled ``__x``, which is a class's own)."""
    return name.startswith("_") and not name.startswith("__")


@dataclass(frozen=True, order=True)
class Reach:
    """One reach into a private API."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _defined_in_class(node: ast.ClassDef) -> set[str]:
    """Private names a class body defines, and those its methods assign on ``self``."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_private(item.name):
            names.add(item.name)
        targets: list[ast.expr] = []
        if isinstance(item, ast.Assign):
            targets = item.targets
        elif isinstance(item, (ast.AnnAssign, ast.AugAssign)):
            targets = [item.target]
        names.update(t.id for t in targets if isinstance(t, ast.Name) and is_private(t.id))
    for inner in ast.walk(node):
        targets = []
        if isinstance(inner, ast.Assign):
            targets = inner.targets
        elif isinstance(inner, (ast.AnnAssign, ast.AugAssign)):
            targets = [inner.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and is_private(target.attr)
            ):
                names.add(target.attr)
    return names


@cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed, once: a file is walked for its classes and again for its reaches."""
    return ast.parse(path.read_text(encoding="utf-8"))


@cache
def _classes_of(path: Path) -> dict[str, set[str]]:
    """Class qualified name -> the private names it defines, for one source file."""
    found: dict[str, set[str]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = prefix + child.name
                found[name] = _defined_in_class(child)
                visit(child, name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, prefix + child.name + ".<locals>.")

    visit(_tree(path), "")
    return found


def _is_third_party(module: str, packages: tuple[str, ...]) -> bool:
    return module.split(".")[0] in packages


def private_names_of(cls: type, packages: tuple[str, ...] = THIRD_PARTY) -> set[str]:
    """The private names the classes of ``packages`` (Textual's and textual-serve's unless
    told) among ``cls``'s ancestors define."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if not _is_third_party(klass.__module__, packages):
            continue
        names.update(n for n in vars(klass) if is_private(n))
        try:
            source = inspect.getsourcefile(klass)
        except TypeError:
            continue
        if source:
            names |= _classes_of(Path(source)).get(klass.__qualname__, set())
    return names


@cache
def third_party_private_names(packages: tuple[str, ...] = THIRD_PARTY) -> frozenset[str]:
    """Every private name a class of ``packages`` (Textual and textual-serve unless told)
    defines, and their modules' private top-level names."""
    names: set[str] = set()
    for package in packages:
        folder = Path(importlib.import_module(package).__file__ or ".").parent
        for path in folder.rglob("*.py"):
            for defined in _classes_of(path).values():
                names |= defined
            for item in _tree(path).body:
                defines = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                if isinstance(item, defines) and is_private(item.name):
                    names.add(item.name)
    return frozenset(names)


def own_private_names(package: Path) -> set[str]:
    """Every private name gputop's own classes define (bodies and ``self._x =``)."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for defined in _classes_of(path).values():
            names |= defined
    return names


def _module_name(package: Path, path: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_third_party(tree: ast.Module, packages: tuple[str, ...]) -> bool:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and _is_third_party(node.module, packages)
        ):
            return True
        if isinstance(node, ast.Import) and any(
            _is_third_party(a.name, packages) for a in node.names
        ):
            return True
    return False


def _private_module(module: str, packages: tuple[str, ...]) -> bool:
    return _is_third_party(module, packages) and any(is_private(part) for part in module.split("."))


def _attribute_name(node: ast.AST) -> tuple[ast.expr, str, int] | None:
    """(receiver, name, line) of ``x._name`` or of ``getattr(x, "_name", ...)`` and its kin."""
    if isinstance(node, ast.Attribute):
        return node.value, node.attr, node.lineno
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value, node.lineno
    return None


def _is_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def reaches(
    package: Path,
    exempt: frozenset[str],
    allowed: frozenset[tuple[str, str]],
    packages: tuple[str, ...] = THIRD_PARTY,
) -> Iterator[Reach]:
    """Every reach into the private API of ``packages`` (Textual's and textual-serve's
    unless told) in ``package`` (the ``gputop`` folder), but in the ``exempt`` files (paths
    relative to it) and the ``allowed`` (file, name) pairs."""
    try:
        yield from _walk(package, exempt, allowed, packages)
    finally:
        # Each file is parsed once for the walk and not kept after it: the trees of some 500
        # files are 840,000 objects, which the pytest worker would carry to its end, every
        # full collection walking them again (benchmarks/README, the suite's time).
        _tree.cache_clear()


def _walk(
    package: Path,
    exempt: frozenset[str],
    allowed: frozenset[tuple[str, str]],
    packages: tuple[str, ...],
) -> Iterator[Reach]:
    theirs = third_party_private_names(packages)
    ours = own_private_names(package)
    for path in sorted(package.rglob("*.py")):
        relative = str(path.relative_to(package))
        if relative in exempt:
            continue
        tree = _tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if _private_module(alias.name, packages):
                        yield Reach(relative, node.lineno, f"import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.module:
                if _private_module(node.module, packages):
                    yield Reach(relative, node.lineno, f"from {node.module} import ...")
                elif _is_third_party(node.module, packages):
                    for alias in node.names:
                        if is_private(alias.name):
                            yield Reach(
                                relative, node.lineno, f"from {node.module} import {alias.name}"
                            )
        if not _imports_third_party(tree, HANDING_OUT + packages):
            continue
        yield from _reaches_in(package, path, relative, tree, theirs, ours, allowed, packages)


def _reaches_in(
    package: Path,
    path: Path,
    relative: str,
    tree: ast.Module,
    theirs: frozenset[str],
    ours: set[str],
    allowed: frozenset[tuple[str, str]],
    packages: tuple[str, ...],
) -> Iterator[Reach]:
    module = importlib.import_module(_module_name(package, path))
    judged: set[int] = set()
    """Attribute nodes judged with their class (``self._x`` in a Textual subclass)."""
    found: list[Reach] = []

    def visit_class(node: ast.ClassDef, qualname: str) -> None:
        target: object = module
        for part in qualname.split("."):
            target = getattr(target, part, None)
        if not isinstance(target, type):
            return  # a class made in a function: its accesses get the general rule
        inherited = private_names_of(target, packages)
        for item in node.body:
            name = None
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = item.name
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                name = item.target.id
            elif isinstance(item, ast.Assign):
                names = [t.id for t in item.targets if isinstance(t, ast.Name)]
                name = names[0] if names else None
            if name is not None and name in inherited:
                found.append(Reach(relative, item.lineno, f"{node.name}.{name} overrides theirs"))
        for inner in ast.walk(node):
            if isinstance(inner, ast.ClassDef) and inner is not node:
                continue
            reached = _attribute_name(inner)
            if reached is None or not _is_self(reached[0]):
                continue
            receiver, name, line = reached
            judged.add(id(inner))
            if name in inherited:
                shown = ast.unparse(receiver)
                found.append(Reach(relative, line, f"{shown}.{name} ({node.name})"))

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit_class(child, prefix + child.name)
                walk(child, prefix + child.name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, prefix + child.name + ".<locals>.")
            else:
                walk(child, prefix)

    walk(tree, "")
    for node in ast.walk(tree):
        reached = _attribute_name(node)
        if reached is None or id(node) in judged:
            continue
        receiver, name, line = reached
        if not is_private(name) or name not in theirs or (relative, name) in allowed:
            continue
        if name in ours and _is_self(receiver):
            continue  # a class of gputop's own, not a Textual one (those were judged above)
        if name in ours and (relative, name) not in allowed:
            what = f"{ast.unparse(receiver)}.{name} (a name both define: allowlist it if ours)"
        else:
            what = f"{ast.unparse(receiver)}.{name}"
        found.append(Reach(relative, line, what))
    yield from found
