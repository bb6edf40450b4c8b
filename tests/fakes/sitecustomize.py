"""Installs the fake NVML into any Python process started with this directory on PYTHONPATH.

Used to run the real ``gputop`` end to end with no GPU::

    PYTHONPATH=tests/fakes GPUTOP_FAKE_NVML=snapshots/rtx3090x4-procs-v12.xml gputop --once

Does nothing unless ``GPUTOP_FAKE_NVML`` is set; see ``fakes.nvml_install`` for the options.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if os.environ.get("GPUTOP_FAKE_NVML"):
    _TESTS = str(Path(__file__).resolve().parent.parent)
    if _TESTS not in sys.path:
        sys.path.append(_TESTS)
    try:
        from fakes.nvml_install import install_from_environment

        install_from_environment()
    except Exception as error:
        # site.py would print this and go on with the real NVML: a test would then talk to
        # whatever GPU the machine has. Stop instead.
        sys.stderr.write(f"fake NVML: {error}\n")
        sys.stderr.flush()
        os._exit(2)
