"""An XID 79 from the fake NVML to a person, for real: the real `gputop export` on the fake
NVML, a real Prometheus evaluating the rules of `gputop alert-rules`, a real Alertmanager
delivering to a webhook this test serves; then the same alert through `gputop cluster`'s
view of the server's firing alerts (``/api/v1/alerts``).

The bound: from the moment the XID is cued to the moment the webhook receives the alert,
:data:`BOUND` seconds. The pipeline's own delays add up to about 4 s (the exporter samples
every 0.5 s, Prometheus scrapes and evaluates every second, Alertmanager waits a second to
group); the rest is slack for a loaded machine.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from gputop.sinks.prometheus.rules import Thresholds, rules_yaml
from support.alertmanager import WebhookReceiver, running_alertmanager
from support.exporter import FOUR, running_exporter
from support.prometheus import cluster, running_prometheus, wait_for_query

BOUND = 30.0
"""Seconds from the cued XID 79 to Alertmanager's notification at the webhook."""


def _config(target: str, rules: Path, alertmanager: str) -> str:
    return (
        "global:\n"
        "  scrape_interval: 1s\n"
        "  evaluation_interval: 1s\n"
        f"rule_files: [{json.dumps(str(rules))}]\n"
        "alerting:\n"
        "  alertmanagers:\n"
        f"    - static_configs: [{{targets: [{json.dumps(alertmanager)}]}}]\n"
        "scrape_configs:\n"
        "  - job_name: gputop\n"
        "    scrape_interval: 1s\n"
        "    scrape_timeout: 1s\n"
        f"    static_configs: [{{targets: [{json.dumps(target)}]}}]\n"
    )


def test_an_injected_xid_79_reaches_alertmanager_and_cluster(tmp_path: Path) -> None:
    cues = tmp_path / "cues"
    cues.write_text("", encoding="utf-8")
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(Thresholds(interval="1s")), encoding="utf-8")
    with (
        WebhookReceiver() as webhook,
        running_alertmanager(webhook.url) as alertmanager,
        running_exporter(
            "--interval",
            "0.5",
            "--hostname",
            "gpu-node-7",
            fake=str(FOUR),
            env={"GPUTOP_FAKE_NVML_CUES": str(cues)},
        ) as exporter,
        running_prometheus(
            [], config=_config(f"127.0.0.1:{exporter.port}", rules, alertmanager)
        ) as prometheus,
    ):
        prometheus.wait_for('up{job="gputop"} == 1')
        # The rules are loaded and evaluated over a healthy box: nothing fires.
        wait_for_query(
            prometheus.url,
            'count(gputop_gpu_lost{Hostname="gpu-node-7"}) == 4',
            lambda result: len(result) == 1,
        )
        assert not [
            alert
            for _, body in webhook.received
            for alert in body.get("alerts", [])
            if alert["labels"]["alertname"].startswith("GpuXid")
        ]
        cued = time.monotonic()
        with cues.open("a", encoding="utf-8") as out:
            out.write("xid 1 79\n")
        arrived, alert = webhook.wait_for_alert("GpuXidBus", BOUND, gpu="1", xid="79")
        took = arrived - cued
        # The same alert through `gputop cluster`, from the server's /api/v1/alerts.
        wait_for_query(prometheus.url, 'ALERTS{alertname="GpuXidBus",alertstate="firing"}', bool)
        as_json = cluster("--prometheus", prometheus.url, "--json")
        as_text = cluster("--prometheus", prometheus.url, "--once")
    assert took < BOUND
    print(f"XID 79 cued -> Alertmanager webhook: {took:.1f} s (bound {BOUND:g} s)")
    labels = alert["labels"]
    assert labels["severity"] == "critical"
    assert labels["Hostname"] == "gpu-node-7"
    assert labels["UUID"].startswith("GPU-")
    annotations = alert["annotations"]
    assert annotations["summary"].startswith("Critical XID 79 (fell off the bus) on GPU 1")
    assert "gpu-node-7" in annotations["description"]
    assert "reboot" in annotations["runbook"]

    assert as_json.returncode == 0, as_json.stderr
    fleet = json.loads(as_json.stdout)
    assert fleet["health"]["nodes_with_critical_xids"] == 1
    assert fleet["health"]["nodes_with_firing_alerts"] == 1
    (node,) = fleet["nodes"]
    assert node["host"] == "gpu-node-7"
    assert [(x["gpu"], x["xid"], x["count"], x["critical"]) for x in node["health"]["xids"]] == [
        ("1", 79, 1, True)
    ]
    firing = {(a["alertname"], a["gpu"], a["severity"]) for a in node["health"]["alerts"]}
    assert ("GpuXidBus", "1", "critical") in firing
    assert as_text.returncode == 0, as_text.stderr
    assert "Health: 1 node with critical XIDs" in as_text.stdout
    assert "gpu-node-7: GPU 1: XID 79 GPU has fallen off the bus (x1)" in as_text.stdout
    assert "gpu-node-7: alert GpuXidBus (critical)" in as_text.stdout
