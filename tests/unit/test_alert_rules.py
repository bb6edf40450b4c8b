"""`gputop alert-rules`: the rule file promtool accepts, and promtool's unit tests of every
rule over gputop's and dcgm-exporter's series (firing, and not firing where it must not)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gputop.cli.alert_rules import alert_rules_main
from gputop.cli.main import main
from gputop.model.health import XIDS
from gputop.sinks.prometheus.rules import (
    Thresholds,
    build_rules,
    critical_xid_classes,
    rules_yaml,
)

PROMTOOL = Path("/usr/bin/promtool")

GPUTOP = {
    "gpu": "0",
    "UUID": "GPU-aaaa",
    "Hostname": "node-1",
    "instance": "node-1:9400",
    "job": "gputop",
}
"""A GPU as `gputop export` labels it (Prometheus adds instance and job)."""
DCGM = {
    "gpu": "1",
    "UUID": "GPU-bbbb",
    "hostname": "node-2",
    "instance": "node-2:9400",
    "job": "dcgm-exporter",
    "namespace": "ml",
    "pod": "trainer-0",
}
"""A GPU as a newer dcgm-exporter labels it, held by a pod."""


def _series(name: str, labels: dict[str, str]) -> str:
    inside = ",".join(f'{key}="{value}"' for key, value in labels.items())
    return f"{name}{{{inside}}}"


def _render(template: str, labels: dict[str, str], value: float) -> str:
    """The Go templates the annotations use, as Prometheus expands them."""

    def when(match: re.Match[str]) -> str:
        return match.group(2) if labels.get(match.group(1)) else ""

    text = re.sub(r"\{\{ if \$labels\.(\w+) \}\}(.*?)\{\{ end \}\}", when, template)
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
    return text.replace("{{ $value }}", f"{value:g}")


def _rules() -> dict[str, dict[str, Any]]:
    (group,) = build_rules(Thresholds())["groups"]
    return {rule["alert"]: rule for rule in group["rules"]}


def _expected(rule: dict[str, Any], labels: dict[str, str], value: float) -> dict[str, Any]:
    annotations = {k: _render(v, labels, value) for k, v in rule["annotations"].items()}
    return {
        "exp_labels": {**labels, **rule["labels"]},
        "exp_annotations": annotations,
    }


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not PROMTOOL.exists():
        raise AssertionError("promtool is not installed: run scripts/install-system-deps")
    return subprocess.run(
        [str(PROMTOOL), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_promtool_checks_the_rules_with_defaults_and_with_flags(tmp_path: Path) -> None:
    for name, thresholds in (
        ("default.yml", Thresholds()),
        ("flags.yml", Thresholds(xid_window="30m", idle_for="2h", interval="15s")),
    ):
        (tmp_path / name).write_text(rules_yaml(thresholds), encoding="utf-8")
        result = _promtool("check", "rules", name, cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout


def test_every_rule_has_summary_description_naming_host_gpu_and_pod_and_a_runbook() -> None:
    rules = _rules()
    assert {
        "GpuUncorrectableEccErrors", "GpuRowRemapFailure", "GpuRowRemapPending", "GpuLost",
        "GpuThermalSlowdown", "GpuHardwareSlowdown", "GpuExporterDown", "GpuExporterStale",
        "GpuHeldButIdle", "GpuXidBus", "GpuXidMemory", "GpuXidNvlink",
    } <= set(rules)  # fmt: skip
    for name, rule in rules.items():
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook"}, name
        assert annotations["runbook"].strip(), name
        if name != "GpuExporterDown":  # no GPU: a whole target
            assert "$labels.Hostname" in annotations["description"], name
        if name not in ("GpuExporterDown", "GpuExporterStale"):
            assert "$labels.gpu" in annotations["description"], name
            assert "$labels.pod" in annotations["description"], name
        assert rule["labels"]["severity"] in ("critical", "warning"), name


def test_critical_xid_classes_cover_every_critical_code_once() -> None:
    classes = critical_xid_classes()
    codes = [code for group in classes.values() for code in group]
    assert sorted(codes) == sorted(c for c, x in XIDS.items() if x.severity.value == "critical")
    assert classes["bus"] == (79,)
    assert 48 in classes["memory"] and 64 in classes["memory"]
    assert 13 not in codes and 31 not in codes


def _unit_tests(rules: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One promtool test per rule (and the cases where it must stay quiet)."""
    tests: list[dict[str, Any]] = []

    def case(
        series: list[tuple[str, dict[str, str], str]],
        checks: list[tuple[str, str, list[tuple[dict[str, str], float]]]],
    ) -> None:
        tests.append(
            {
                "interval": "1m",
                "input_series": [
                    {"series": _series(name, labels), "values": values}
                    for name, labels, values in series
                ],
                "alert_rule_test": [
                    {
                        "eval_time": at,
                        "alertname": alert,
                        "exp_alerts": [
                            _expected(rules[alert], labels, value) for labels, value in fired
                        ],
                    }
                    for at, alert, fired in checks
                ],
            }
        )

    # Critical XIDs, one class at a time, from gputop's counter: a series that appears fires,
    # one that grows fires again, and one that stayed put for the window is quiet.
    for group, codes in critical_xid_classes().items():
        alert = f"GpuXid{'Nvlink' if group == 'nvlink' else group.title()}"
        code = str(codes[0])
        labels = {**GPUTOP, "xid": code}
        case(
            [
                ("gputop_xid_errors_total", labels, "_ _ 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2 2"),
                ("gputop_gpu_lost", GPUTOP, "0x17"),
                # gputop also writes dcgm-exporter's gauge: not a second alert.
                ("DCGM_FI_DEV_XID_ERRORS", GPUTOP, "0 0"),
                (
                    "DCGM_FI_DEV_XID_ERRORS",
                    {**GPUTOP, "err_code": code, "err_msg": XIDS[codes[0]].description},
                    f"_ _ {code}x15",
                ),
            ],
            [
                ("1m", alert, []),
                ("3m", alert, [(labels, 1.0)]),
                ("14m", alert, []),
                ("17m", alert, [(labels, 2.0)]),
            ],
        )
    # XID 79 from dcgm-exporter's gauge alone: the last code, fresh within the window.
    xid79 = {**DCGM, "err_code": "79", "err_msg": "GPU has fallen off the bus"}
    case(
        [("DCGM_FI_DEV_XID_ERRORS", xid79, "_ _ 79x20"), ("DCGM_FI_DEV_XID_ERRORS", DCGM, "0x20")],
        [("1m", "GpuXidBus", []), ("2m", "GpuXidBus", [(xid79, 79.0)]), ("15m", "GpuXidBus", [])],
    )
    # An application's XID (13) is no critical alert.
    case(
        [
            ("gputop_xid_errors_total", {**GPUTOP, "xid": "13"}, "_ 1 2 3"),
            ("gputop_gpu_lost", GPUTOP, "0x3"),
        ],
        [("2m", f"GpuXid{title}", []) for title in ("Bus", "Memory", "Nvlink", "Firmware")],
    )
    # ECC, row remapping and page retirement: from either exporter.
    for alert, name in (
        ("GpuUncorrectableEccErrors", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
        ("GpuRowRemapFailure", "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
        ("GpuRowRemapPending", "DCGM_FI_DEV_ROW_REMAP_PENDING"),
        ("GpuRetiredPagesPending", "DCGM_FI_DEV_RETIRED_PENDING"),
    ):
        case(
            [(name, GPUTOP, "0 0 2 2"), (name, DCGM, "0 0 0 1")],
            [
                ("1m", alert, []),
                ("2m", alert, [(GPUTOP, 2.0)]),
                ("3m", alert, [(GPUTOP, 2.0), (DCGM, 1.0)]),
            ],
        )
    case(
        [("gputop_gpu_lost", GPUTOP, "0 0 1 1")],
        [("1m", "GpuLost", []), ("2m", "GpuLost", [(GPUTOP, 1.0)])],
    )
    # Slowdowns for 5 minutes; the power cap is not one.
    for alert, reason, event in (
        ("GpuThermalSlowdown", "hw_thermal_slowdown", "hw_thermal"),
        ("GpuHardwareSlowdown", "hw_power_brake_slowdown", "hw_power_brake"),
    ):
        slowed = {**GPUTOP, "reason": reason}
        counted = {**DCGM, "clock_event": event, "window_size_in_ms": "300000"}
        case(
            [
                ("gputop_throttle_reason", slowed, "1x10"),
                ("gputop_throttle_reason", {**GPUTOP, "reason": "sw_power_cap"}, "1x10"),
                ("gputop_gpu_lost", GPUTOP, "0x10"),
                ("DCGM_EXP_CLOCK_EVENTS_COUNT", counted, "3x10"),
            ],
            [
                ("4m", alert, []),
                ("6m", alert, [(slowed, 1.0), (counted, 3.0)]),
            ],
        )
    # Exporters down or stale for 5 minutes.
    target = {"instance": "node-1:9400", "job": "gputop"}
    case(
        [("up", target, "1 0x8"), ("up", {"instance": "x:1", "job": "node"}, "0x8")],
        [("4m", "GpuExporterDown", []), ("7m", "GpuExporterDown", [(target, 0.0)])],
    )
    exporter = {"Hostname": "node-1", "instance": "node-1:9400", "job": "gputop"}
    case(
        [("gputop_stale", exporter, "0 1x8")],
        [("4m", "GpuExporterStale", []), ("7m", "GpuExporterStale", [(exporter, 1.0)])],
    )
    # A GPU held and unused for an hour: processes on it (gputop), a pod (dcgm-exporter),
    # or a pod's engine activity under 0.01; a GPU with nobody on it is no alert.
    unused = {**GPUTOP, "gpu": "2", "UUID": "GPU-cccc"}
    busy_pod = {**DCGM, "gpu": "3", "UUID": "GPU-dddd", "pod": "busy-0"}
    case(
        [
            ("DCGM_FI_DEV_GPU_UTIL", GPUTOP, "0x70"),
            ("gputop_processes", GPUTOP, "1x70"),
            ("DCGM_FI_DEV_GPU_UTIL", unused, "0x70"),
            ("gputop_processes", unused, "0x70"),
            ("DCGM_FI_DEV_GPU_UTIL", DCGM, "0x70"),
            ("DCGM_FI_DEV_GPU_UTIL", busy_pod, "40x70"),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", busy_pod, "0.004x70"),
        ],
        [
            ("50m", "GpuHeldButIdle", []),
            (
                "65m",
                "GpuHeldButIdle",
                [(GPUTOP, 0.0), (DCGM, 0.0), (busy_pod, 0.004)],
            ),
        ],
    )
    return tests


def test_promtool_unit_tests_of_every_rule(tmp_path: Path) -> None:
    rules = _rules()
    (tmp_path / "rules.yml").write_text(rules_yaml(Thresholds()), encoding="utf-8")
    tests = _unit_tests(rules)
    tested = {check["alertname"] for test in tests for check in test["alert_rule_test"]}
    assert tested == set(rules), set(rules) - tested
    document = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(document, sort_keys=False))
    result = _promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "SUCCESS" in result.stdout


def test_a_broken_rule_fails_its_promtool_test(tmp_path: Path) -> None:
    """The unit tests can fail: a rule that never fires is caught."""
    broken = rules_yaml(Thresholds()).replace(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", "DCGM_FI_DEV_ROW_REMAP_FAILURE > 5"
    )
    (tmp_path / "rules.yml").write_text(broken, encoding="utf-8")
    tests = [t for t in _unit_tests(_rules()) if "GpuRowRemapFailure" in str(t)]
    document = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(document, sort_keys=False))
    result = _promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode != 0
    assert "GpuRowRemapFailure" in result.stdout + result.stderr


def test_the_command_prints_the_file_and_flags_change_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["alert-rules", "--idle-for", "2h", "--interval", "10s"]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    (group,) = document["groups"]
    assert group["interval"] == "10s"
    idle = next(rule for rule in group["rules"] if rule["alert"] == "GpuHeldButIdle")
    assert idle["for"] == "2h"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--idle-for", "an hour"], "--idle-for"),
        (["--idle-utilization", "150"], "--idle-utilization"),
        (["--idle-activity", "-1"], "--idle-activity"),
        (["--job", 'x"y'], "--job"),
        (["--nope"], "unrecognized"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["alert-rules", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert said in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_alert_rules_main_is_what_main_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert alert_rules_main([]) == 0
    assert capsys.readouterr().out == rules_yaml(Thresholds())


def test_the_readme_holds_the_rule_file_as_the_command_prints_it() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Health and alerts") :]
    section = section[: section.index("\n## ", 1)]
    start = section.index("```yaml\n# GPU health alerts") + len("```yaml\n")
    shown = section[start : section.index("```", start)]
    assert shown == rules_yaml(Thresholds())
    assert "rule_files:" in section and "promtool check rules" in section
