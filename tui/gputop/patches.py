"""Whether each of gputop's patches of Textual (``ui/compat.py``) and textual-serve
(``web/serve_compat.py``) applies: the one switch for all of them. (Its one reach into
plotext's private API, ``plotext_compat.py``, is a ``Patch`` too, checked against the
installed release alone: there is no stock plotext figure to switch to.)

A patch applies unless ``GPUTOP_STOCK_TEXTUAL`` turns it off (``1``: every patch, stock
Textual and stock textual-serve, but for the security fixes of ``serve``; a comma list of
patch names: those alone, which is how each patch's gain is measured side by side), or the
installed release of the package it patches is not the one it was written against, or lacks
a private name the patch reaches for: then it is said once, in one line on stderr, and the
stock behaviour is used.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gputop.model.safe_text import terminal_safe

STOCK_VARIABLE = "GPUTOP_STOCK_TEXTUAL"

_said: set[tuple[str, str]] = set()
"""What was said on stderr already: ("patch", its name) or ("variable", its value)."""


@dataclass(frozen=True)
class Patch:
    """One change to Textual's (or textual-serve's) behaviour, or one reach into its (or
    plotext's) private API."""

    name: str
    """What ``GPUTOP_STOCK_TEXTUAL`` calls it."""
    fixes: str
    """What it fixes or saves."""
    gain: str
    """Its measured gain (``benchmarks/README.md``), or why it is not a speed patch."""
    package: str
    """The distribution it patches: ``textual``, ``textual-serve`` or ``plotext``."""
    written_for: str
    """The release series (major.minor) it was written against."""
    kept_in_stock: bool = False
    """Kept with ``GPUTOP_STOCK_TEXTUAL=1`` (a security fix, not a speed patch); only its
    own name in that variable turns it off."""
    without: str = "running without it"
    """What gputop does instead when the installed release is another (said on stderr)."""
    needs: tuple[str, ...] = ()
    """The private names it reaches for in modules and on classes, each ``module:attribute``
    (the attribute may be dotted, or left out for the module alone): a release of the same
    series that moved one turns the patch off as another series does. The module that
    patches binds them only once the patch applies, so it still imports when one has moved.
    (Attributes an instance sets, such as DataTable's caches, cannot be checked so.)"""


SWITCHED_NAMES = frozenset(
    {
        # ui/compat.py
        "quiet_driver",
        "withdraw_toast",
        "remeasured_table",
        "cell_cache",
        "table_caches",
        "styled_once",
        "changed_spans",
        "dirty_lines",
        "direct_repaint",
        # web/serve_compat.py
        "page_session",
        "viewer_end",
        # cli/code_cache.py
        "dataclass_code",
    }
)
"""Every name ``GPUTOP_STOCK_TEXTUAL`` may list, kept here rather than gathered from the
modules that define them, which a run need not import (a test holds the two equal)."""


def stock_names() -> frozenset[str] | None:
    """The patches ``GPUTOP_STOCK_TEXTUAL`` turns off: None for all of them, or the names
    it lists (none when it is unset, empty or ``0``). A name it does not switch is said once,
    in one line on stderr: a misspelt name would have a benchmark measure a run against itself."""
    value = os.environ.get(STOCK_VARIABLE, "").strip()
    if value in ("", "0"):
        return frozenset()
    if value.lower() in ("1", "yes", "true", "all"):
        return None
    names = frozenset(name.strip() for name in value.split(",") if name.strip())
    unknown = sorted(names - SWITCHED_NAMES)
    if unknown and ("variable", value) not in _said:
        _said.add(("variable", value))
        print(
            f"gputop: {STOCK_VARIABLE} names what it does not switch: "
            f"{terminal_safe(', '.join(unknown))} "
            f"(it switches {', '.join(sorted(SWITCHED_NAMES))})",
            file=sys.stderr,
            flush=True,
        )
    return names


@cache
def installed_version(distribution: str) -> str:
    """The installed version of ``distribution`` ("" when it cannot be told).

    Read from the ``.dist-info`` folder beside the package (a directory listing), not
    through ``importlib.metadata``, which costs a start about 10 ms of imports."""
    module = sys.modules.get(distribution.replace("-", "_"))
    folder = Path(getattr(module, "__file__", None) or ".").parent.parent
    prefix = distribution.replace("-", "_").lower() + "-"
    try:
        for entry in os.scandir(folder):
            name = entry.name.lower()
            if name.startswith(prefix) and name.endswith(".dist-info"):
                return entry.name[len(prefix) : -len(".dist-info")]
    except OSError:
        pass
    # Deferred: importlib.metadata (68 modules, 100 ms), only if no dist-info has the name.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""


def series(version: str) -> str:
    """``major.minor`` of a version (``8.2`` of ``8.2.8``)."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return f"{match[1]}.{match[2]}" if match else version


_ABSENT = object()


@cache
def missing_name(patch: Patch) -> str | None:
    """The first of ``patch.needs`` the installed release lacks, if any (looked up once a
    patch: ``enabled`` is asked on every repaint)."""
    for need in patch.needs:
        module_name, _, path = need.partition(":")
        try:
            __import__(module_name)
        except ImportError:
            return need
        found: object = sys.modules[module_name]
        for name in filter(None, path.split(".")):
            found = getattr(found, name, _ABSENT)
            if found is _ABSENT:
                return need
    return None


def version_matches(patch: Patch) -> bool:
    """Whether the installed release of what ``patch`` patches is the one it was written
    for, with every private name it reaches for; when not, says so once in one line on
    stderr."""
    installed = installed_version(patch.package)
    shown = installed or "(version unknown)"
    if series(installed) != patch.written_for:
        why = f"is not {patch.written_for}, which gputop's {patch.name} patch was written for"
    elif (missing := missing_name(patch)) is not None:
        why = f"has no {missing}, which gputop's {patch.name} patch reaches for"
    else:
        return True
    if ("patch", patch.name) not in _said:
        _said.add(("patch", patch.name))
        print(
            f"gputop: {patch.package} {shown} {why}: {patch.without}", file=sys.stderr, flush=True
        )
    return False


def enabled(patch: Patch) -> bool:
    """Whether ``patch`` applies now (see the module's docstring)."""
    off = stock_names()
    if (off is None and not patch.kept_in_stock) or (off is not None and patch.name in off):
        return False
    return version_matches(patch)
