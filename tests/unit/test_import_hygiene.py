"""The one-way layering holds: headless code never loads Textual; only the NVML source, pynvml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tui" / "gputop"

HEADLESS_MODULES = [
    "gputop.model",
    "gputop.model.units",
    "gputop.model.mig_profiles",
    "gputop.sources.smi_xml",
    "gputop.sources.recording",
    "gputop.headless",
    "gputop.cli",
    "gputop.pipeline",
    "gputop.history.store",
    "gputop.sources.replay",
    "gputop.sources.gpu_select",
    "gputop.sources.smi_writer",
    "gputop.insight.diagnosis",
    "gputop.insight.report",
    "gputop.report_cli",
    "gputop.live",
    "gputop.sinks",
]


@pytest.mark.parametrize("module", HEADLESS_MODULES)
def test_headless_module_does_not_load_textual(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'pynvml'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_only_the_nvml_source_imports_pynvml() -> None:
    importers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "import pynvml" in path.read_text() or "from pynvml" in path.read_text()
    )
    assert all(name.startswith("sources/nvml") for name in importers), importers


def test_headless_packages_do_not_import_the_ui() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for folder in ("model", "sources", "history", "insight")
        if (PACKAGE / folder).is_dir()
        for path in (PACKAGE / folder).rglob("*.py")
        if any(
            token in path.read_text()
            for token in ("import textual", "from textual", "from gputop.ui", "import gputop.ui")
        )
    ]
    assert offenders == []
