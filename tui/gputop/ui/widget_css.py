"""Widget CSS kept in ``.tcss`` files beside the widget's module, not in strings."""

from __future__ import annotations

from pathlib import Path


def css_beside(module_file: str) -> str:
    """The TCSS of the file named like ``module_file`` (``x.py`` -> ``x.tcss``).

    For a widget's ``DEFAULT_CSS``: the widget then carries its look wherever it is mounted
    (tests mount widgets in bare apps), and the app's own sheets still override it.
    """
    return Path(module_file).with_suffix(".tcss").read_text(encoding="utf-8")
