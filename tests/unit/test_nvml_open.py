"""open_nvml_source: each way NVML can fail to start is one distinct, actionable line."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pynvml  # noqa: TID251 -- NVML return codes and the real module under test
import pytest

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_install import installed
from fakes.nvml_scenarios import gpu_sample, snapshot
from gputop.errors import GputopError, NoDriver, NoPermission
from gputop.sources.nvml.source import BUNDLED_CAPTURE_HINT, open_nvml_source
from support.shortcuts import snapshot_from_path

CASES = {
    "library": (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, NoDriver, "library not found"),
    "driver": (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, NoDriver, "driver not loaded"),
    "permission": (pynvml.NVML_ERROR_NO_PERMISSION, NoPermission, "no permission"),
    "mismatch": (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, NoDriver, "version mismatch"),
    "other": (pynvml.NVML_ERROR_UNKNOWN, NoDriver, "failed to start"),
}


def _open_error(fake: FakeNvml) -> GputopError:
    with installed(fake), pytest.raises(GputopError) as caught:
        open_nvml_source(deadline=None)
    return caught.value


def _check_line(error: GputopError) -> str:
    text = str(error)
    assert "\n" not in text
    assert BUNDLED_CAPTURE_HINT in text
    assert "`gputop --demo` replays a recorded 4-GPU box, and --replay FILE plays" in text
    return text


@pytest.mark.parametrize("case", sorted(CASES))
def test_init_failures(case: str) -> None:
    code, kind, words = CASES[case]
    error = _open_error(FakeNvml(snapshot(gpu_sample(0)), Faults(init_error=code)))
    assert type(error) is kind
    assert error.exit_code == 1
    assert words in _check_line(error).lower()


def test_no_gpu() -> None:
    fake = FakeNvml(snapshot())
    error = _open_error(fake)
    assert type(error) is NoDriver
    assert "no nvidia gpu found" in _check_line(error).lower()
    # NVML was initialised, so it is shut down again.
    assert fake.initialized == 0


def test_every_case_has_its_own_message() -> None:
    messages = {
        str(_open_error(FakeNvml(snapshot(gpu_sample(0)), Faults(init_error=code))))
        for code, _, _ in CASES.values()
    }
    messages.add(str(_open_error(FakeNvml(snapshot()))))
    messages.add(str(_mismatch_error()))
    messages.add(str(_no_package_error()))
    # The two version-mismatch spellings (RM code, pynvml's exception) say the same thing.
    assert len(messages) == len(CASES) + 2


def _mismatch_error() -> GputopError:
    # pynvml raises NVMLLibraryMismatchError (not an NVMLError) from its own wrappers when the
    # library lacks an entry point; a stand-in module raises it from nvmlInit.
    def init() -> None:
        raise pynvml.NVMLLibraryMismatchError("Unversioned function called")

    stand_in = SimpleNamespace(**{k: getattr(pynvml, k) for k in dir(pynvml) if k.isupper()})
    stand_in.NVMLError = pynvml.NVMLError
    stand_in.NVMLLibraryMismatchError = pynvml.NVMLLibraryMismatchError
    stand_in.nvmlInit = init
    with pytest.raises(GputopError) as caught:
        open_nvml_source(nvml=stand_in)
    return caught.value


def test_library_mismatch_exception() -> None:
    error = _mismatch_error()
    assert type(error) is NoDriver
    assert "version mismatch" in _check_line(error)


def _no_package_error() -> GputopError:
    saved = sys.modules.get("pynvml")
    sys.modules["pynvml"] = None  # type: ignore[assignment]
    try:
        with pytest.raises(GputopError) as caught:
            open_nvml_source()
    finally:
        sys.modules["pynvml"] = saved  # type: ignore[assignment]
    return caught.value


def test_missing_python_package() -> None:
    error = _no_package_error()
    assert type(error) is NoDriver
    assert "pip install nvidia-ml-py" in _check_line(error)


def test_opens_polls_and_shuts_down() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    with installed(fake):
        source = open_nvml_source(deadline=1.0)
        assert fake.initialized == 1
        got = source.poll()
        source.close()
        source.close()
    assert [g.name for g in got.gpus] == ["NVIDIA RTX A6000"] * 2
    assert fake.initialized == 0
    with pytest.raises(RuntimeError):
        source.poll()


def test_the_hint_names_the_demo_of_a_bundled_capture() -> None:
    from gputop.cli.demo import DEMO_CAPTURE

    assert BUNDLED_CAPTURE_HINT == "gputop --demo"
    assert len(snapshot_from_path(DEMO_CAPTURE).gpus) == 4


def test_a_slow_driver_start_as_the_environment_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    # What bench_tui and the end-to-end runs use to play a driver that is slow to start.
    import time

    from fakes.nvml_install import install_from_environment, restored

    monkeypatch.setenv("GPUTOP_FAKE_NVML", "snapshots/rtx3090x4-procs-v12.xml")
    monkeypatch.setenv("GPUTOP_FAKE_NVML_LATENCY", "0.0001, nvmlInitWithFlags=0.2")
    with restored():  # install_from_environment installs for good
        fake = install_from_environment()
        assert fake is not None
        assert fake.faults.latency == 0.0001
        assert fake.faults.latency_by_name == {"nvmlInitWithFlags": 0.2}
        started = time.perf_counter()
        open_nvml_source(deadline=None).close()
        assert time.perf_counter() - started >= 0.2
