"""The real `gputop export` on 127.0.0.1: scraped over HTTP, checked against the capture it
serves, by promtool, with TLS and basic auth, a hung driver, and bad input."""

from __future__ import annotations

import base64
import http.client
import re
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support.command import ROOT, gputop_command, start_gputop
from support.exporter import FOUR, running_exporter, stop
from support.metrics import Series, document, find, series, web_config
from support.net import free_port, http_get
from support.shortcuts import snapshot_from_path

MIB = 1024 * 1024
PROMTOOL = Path("/usr/bin/promtool")
MIG_TEXT = ROOT / "snapshots" / "h100-mig-590-q.txt"


def test_serves_the_live_gpus_values_under_dcgm_names() -> None:
    expected = snapshot_from_path(FOUR)
    with running_exporter("--interval", "0.5") as exporter:
        values = series(exporter.metrics())
        status, page = http_get(f"{exporter.url}/")
    assert status == 200 and b"/metrics" in page
    for gpu in expected.gpus:
        labels = {"gpu": str(gpu.index), "UUID": str(gpu.uuid), "device": f"nvidia{gpu.index}"}
        assert gpu.memory.used is not None and gpu.power.draw is not None
        assert find(values, "DCGM_FI_DEV_FB_USED", **labels) == [gpu.memory.used // MIB]
        assert find(values, "DCGM_FI_DEV_POWER_USAGE", **labels) == [pytest.approx(gpu.power.draw)]
        assert find(values, "DCGM_FI_DEV_GPU_UTIL", **labels) == [gpu.utilization.gpu]
        assert find(values, "DCGM_FI_DEV_GPU_TEMP", **labels) == [gpu.temperature.gpu]
        assert find(values, "DCGM_FI_DEV_GPU_TEMP", modelName=str(gpu.name))
        for process in gpu.processes:
            assert find(
                values,
                "gputop_process_memory_used_bytes",
                gpu=str(gpu.index),
                pid=str(process.pid),
                process_name=str(process.name),
            ) == [process.memory_used]
    assert find(values, "gputop_stale") == [0.0]
    assert find(values, "DCGM_FI_DEV_GPU_TEMP", DCGM_FI_DRIVER_VERSION=str(expected.driver_version))


def test_read_only_and_nothing_but_metrics() -> None:
    with running_exporter() as exporter:
        host = ("127.0.0.1", exporter.port)
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FROB"):
            connection = http.client.HTTPConnection(*host, timeout=5)
            connection.request(method, "/metrics", body=b"x")
            answer = connection.getresponse()
            assert answer.status == 405, method
            assert "GET" in (answer.getheader("Allow") or "")
            connection.close()
        connection = http.client.HTTPConnection(*host, timeout=5)
        connection.request("HEAD", "/metrics")
        head = connection.getresponse()
        assert head.status == 200 and head.read() == b""
        assert int(head.getheader("Content-Length") or 0) > 1000
        assert "version=0.0.4" in (head.getheader("Content-Type") or "")
        assert http_get(f"{exporter.url}/api/v1/anything")[0] == 404


def promtool(text: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, text=True
    )
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if line]


# promtool's lint rules that dcgm-exporter's own names break, and nothing else may.
DCGM_COUNTER = re.compile(r"^(DCGM_\w+) counter metrics should have \"_total\" suffix$")


@pytest.mark.parametrize(
    ("fake", "args"),
    [
        (str(FOUR), ()),
        ("h100-mig-8x7", ()),
        (str(FOUR), ("--replay", str(MIG_TEXT))),
        (str(FOUR), ("--replay", str(ROOT / "snapshots" / "h200-mig-590-q.txt"))),
        (str(FOUR), ("--replay", str(ROOT / "snapshots" / "a100-sxm4-80gb-mig-v12.xml"))),
        ("h200-train", ()),
    ],
    ids=["4x3090", "8x7-mig", "replay-h100-mig", "replay-h200-mig", "replay-a100-mig", "h200-gpm"],
)
def test_promtool_accepts_the_output(fake: str, args: tuple[str, ...]) -> None:
    assert PROMTOOL.exists(), "promtool: run scripts/install-system-deps"
    with running_exporter(*args, fake=fake) as exporter:
        time.sleep(1.2)  # a second sample: GPM activity, clock events
        text = exporter.metrics()
    # Each series once: Prometheus drops a scrape that repeats one.
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    keys = [line.rsplit(" ", 1)[0] for line in lines]
    assert len(keys) == len(set(keys))
    # dcgm-exporter's modelName label is camelCase: promtool's only complaint about labels.
    code, problems = promtool(text.replace("modelName=", "model_name="))
    assert code in (0, 3), problems  # 1 would be a format error
    assert problems, "the DCGM counters have no _total suffix: promtool says so"
    for line in problems:
        match = DCGM_COUNTER.match(line)
        assert match is not None, line
    code, problems = promtool(text)
    assert code == 3
    camel = [line for line in problems if "camelCase" in line]
    assert camel and all(not DCGM_COUNTER.match(line) for line in camel)


def test_mig_instances_of_a_capture_carry_gpu_i_labels() -> None:
    expected = document(MIG_TEXT)
    with running_exporter("--replay", str(MIG_TEXT), "--hostname", "node-a") as exporter:
        values = series(exporter.metrics())
    (gpu,) = expected.gpus
    assert len(gpu.mig_devices) >= 3
    for device in gpu.mig_devices:
        assert device.memory.used is not None and device.profile is not None
        labels = {"GPU_I_ID": str(device.gpu_instance_id), "GPU_I_PROFILE": device.profile}
        assert find(values, "DCGM_FI_DEV_FB_USED", Hostname="node-a", **labels) == [
            device.memory.used // MIB
        ]
    in_instance = [p for p in gpu.processes if p.gpu_instance_id is not None]
    assert in_instance
    for process in in_instance:
        assert find(
            values,
            "gputop_process_memory_used_bytes",
            pid=str(process.pid),
            GPU_I_ID=str(process.gpu_instance_id),
        )
    # A text capture has no GPM activity: no per-instance engine activity is made up.
    assert find(values, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == []


def test_gr_engine_active_where_gpm_measures_instances() -> None:
    with running_exporter("--interval", "0.25", fake="h100-mig-8x7") as exporter:
        values = exporter.scrape_until("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 10, gpu="3")
    active = find(values, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu="3")
    assert len(active) == 7
    assert all(0.0 <= value <= 1.0 for value in active)
    assert len(find(values, "DCGM_FI_DEV_FB_USED", GPU_I_PROFILE="1g.10gb")) == 56


@pytest.mark.parametrize("mode", ["none", "basic", "full"])
def test_export_processes_mode(mode: str) -> None:
    with running_exporter("--export-processes", mode) as exporter:
        text = exporter.metrics()
    process_lines = [line for line in text.splitlines() if line.startswith("gputop_process_")]
    if mode == "none":
        assert process_lines == []
        assert "pid=" not in text
        return
    assert process_lines and all('pid="' in line for line in process_lines)
    assert any('process_name="' in line for line in process_lines)
    if mode == "basic":
        assert not any(re.search(r'[{,](user|command)="', line) for line in text.splitlines())


def test_a_hung_driver_call_is_served_stale_and_scrapes_stay_fast() -> None:
    hang = {"GPUTOP_FAKE_NVML_HANG": "0:nvmlDeviceGetPowerUsage@2"}
    with running_exporter("--interval", "0.5", env=hang) as exporter:
        deadline = time.monotonic() + 20
        slowest = 0.0
        while True:
            began = time.monotonic()
            values = series(exporter.metrics())
            slowest = max(slowest, time.monotonic() - began)
            if find(values, "gputop_gpu_stale", gpu="0") == [1.0] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert find(values, "gputop_gpu_stale", gpu="0") == [1.0]
        assert find(values, "gputop_gpu_stale", gpu="1") == [0.0]
        # GPU 0's last values are still served.
        assert find(values, "DCGM_FI_DEV_POWER_USAGE", gpu="0")
        assert slowest < 1.0


def https_get(port: int, cert: Path, auth: tuple[str, str] | None) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(cert))
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return int(answer.status), bytes(answer.read())
    except urllib.error.HTTPError as error:
        return int(error.code), b""


def test_tls_and_basic_auth_from_a_web_config(tmp_path: Path) -> None:
    config = web_config(tmp_path)
    cert = tmp_path / "server.crt"
    with running_exporter("--web-config-file", str(config), tls=cert) as exporter:
        status, body = https_get(exporter.port, cert, ("alice", "s3cret"))
        assert status == 200 and b"DCGM_FI_DEV_FB_USED{" in body
        assert https_get(exporter.port, cert, ("alice", "wrong"))[0] == 401
        assert https_get(exporter.port, cert, ("mallory", "s3cret"))[0] == 401
        assert https_get(exporter.port, cert, None)[0] == 401
        # Plain HTTP on the TLS port is told so (as Go's servers say it), and gets no metrics.
        status, body = http_get(f"http://127.0.0.1:{exporter.port}/metrics", timeout=3)
        assert (status, body) == (400, b"Client sent an HTTP request to an HTTPS server.\n")


def run_export(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    command, environ = gputop_command(str(FOUR))
    return subprocess.run(
        [*command, "export", *args], cwd=ROOT, env=environ, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def one_line_exit_2(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("gputop: ") and "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        one_line_exit_2(run_export("--listen", f"127.0.0.1:{port}"), "already in use")


@pytest.mark.parametrize(
    ("listen", "words"),
    [
        ("9400", ("HOST:PORT",)),
        ("127.0.0.1:99999", ("1 to 65535",)),
        ("127.0.0.1:http", ("1 to 65535",)),
        ("::1:9400", ("brackets",)),
        ("no-such-host.invalid:9400", ("cannot listen",)),
        ("192.0.2.1:9400", ("not one of this machine's",)),
    ],
)
def test_a_bad_listen_address_is_one_line(listen: str, words: tuple[str, ...]) -> None:
    one_line_exit_2(run_export("--listen", listen), *words)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, ("cannot read",)),
        ("tls_server_config: [unclosed\n", ("not valid YAML",)),
        ("basic_auth_users:\n  alice: plaintext\n", ("not a bcrypt hash",)),
        ("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n", ("nope",)),
        ("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n",
         ("unsupported",)),
        ("- a list\n", ("mapping",)),
    ],
)  # fmt: skip
def test_a_bad_web_config_is_one_line(
    tmp_path: Path, content: str | None, words: tuple[str, ...]
) -> None:
    config = tmp_path / "web.yml"
    if content is not None:
        config.write_text(content)
    one_line_exit_2(run_export("--web-config-file", str(config), "--listen",
                               f"127.0.0.1:{free_port()}"), *words)  # fmt: skip


def test_sigterm_and_ctrl_c_stop_cleanly() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        with running_exporter() as exporter:
            exporter.process.send_signal(sig)
            code = exporter.process.wait(10)
            err = exporter.stderr()
        assert code == 0, err
        assert "Traceback" not in err


def test_replay_at_holds_that_document() -> None:
    stream = ROOT / "snapshots" / "h100-mig-590-q-l.txt"
    last = document(stream, -1)
    with running_exporter("--replay", str(stream), "--at", "-1") as exporter:
        first = series(exporter.metrics())
        time.sleep(1.5)
        again = series(exporter.metrics())
    (gpu,) = last.gpus
    for device in gpu.mig_devices:
        assert device.memory.used is not None
        wanted = [device.memory.used // MIB]
        assert find(first, "DCGM_FI_DEV_FB_USED", GPU_I_ID=str(device.gpu_instance_id)) == wanted
        assert find(again, "DCGM_FI_DEV_FB_USED", GPU_I_ID=str(device.gpu_instance_id)) == wanted
    assert find(again, "gputop_stale") == [0.0]  # a recording held on purpose is not stale


def test_the_energy_counter_in_millijoules() -> None:
    with running_exporter(fake="plain-8") as exporter:
        text = exporter.metrics()
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in text
    values = series(text)
    for gpu in range(8):
        assert find(values, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu=str(gpu)) == [8_765_432_100]
    # A capture's cards do not report it (the fake answers as an older GPU): not emitted.
    with running_exporter() as exporter:
        assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" not in exporter.metrics()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--interval", "nan"), ("--interval",)),
        (("--at", "3"), ("--replay",)),
        (("--gpu", "7"), ("7",)),
        (("--replay", "snapshots/no-such-file.xml"), ("no-such-file",)),
        (("--export-processes", "everything"), ("--export-processes",)),
    ],
)
def test_bad_options_are_one_line(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    one_line_exit_2(run_export("--listen", f"127.0.0.1:{free_port()}", *args), *words)


def test_no_driver_is_one_line_and_exit_1() -> None:
    command, environ = gputop_command("no-driver")
    done = subprocess.run(
        [*command, "export", "--listen", f"127.0.0.1:{free_port()}"],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "driver" in done.stderr


def test_gpu_selects_what_is_exported() -> None:
    with running_exporter("--gpu", "1,3") as exporter:
        values = series(exporter.metrics())
    assert sorted(
        label for label in ("0", "1", "2", "3") if find(values, "DCGM_FI_DEV_FB_USED", gpu=label)
    ) == ["1", "3"]


def test_replay_plays_at_the_recorded_pace_then_holds_the_last(tmp_path: Path) -> None:
    from gputop.sinks.smi_xml import snapshot_to_xml
    from support.apps import varied_stream

    stream = varied_stream(document(FOUR), 3, step=2.0)
    recording = tmp_path / "run.xml"
    recording.write_bytes(b"".join(snapshot_to_xml(shot) for shot in stream))
    expected = [document(recording, index) for index in range(3)]
    utilization = [[gpu.utilization.gpu for gpu in shot.gpus] for shot in expected]
    assert len({tuple(row) for row in utilization}) == 3  # each document differs

    def scraped(values: Series) -> list[float | None]:
        return [find(values, "DCGM_FI_DEV_GPU_UTIL", gpu=str(i))[0] for i in range(4)]

    with running_exporter("--replay", str(recording), "--interval", "0.25") as exporter:
        seen = [scraped(series(exporter.metrics()))]
        deadline = time.monotonic() + 15
        while seen[-1] != utilization[-1] and time.monotonic() < deadline:
            time.sleep(0.1)
            now = scraped(series(exporter.metrics()))
            if now != seen[-1]:
                seen.append(now)
        time.sleep(2.5)
        held = scraped(series(exporter.metrics()))
    # Document by document, in order (a slow start may miss the first), to the last, held.
    assert len(seen) >= 2 and seen == utilization[len(utilization) - len(seen) :]
    assert held == utilization[-1]


def test_listens_on_ipv6_in_brackets() -> None:
    port = free_port()
    process = start_gputop("export", "--listen", f"[::1]:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = http_get(f"http://[::1]:{port}/metrics", timeout=2)
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert status == 200 and b"DCGM_FI_DEV_GPU_UTIL{" in body
    finally:
        assert stop(process) == 0


def test_demo_exports_the_bundled_capture_without_a_driver() -> None:
    # The no-driver hint says `--demo`: it must work for export too.
    wanted = document(FOUR, 0)
    with running_exporter("--demo", fake="no-driver") as exporter:
        values = series(exporter.metrics())
    for gpu in wanted.gpus:
        assert gpu.memory.used is not None
        used = find(values, "DCGM_FI_DEV_FB_USED", gpu=str(gpu.index))
        assert used == [gpu.memory.used // MIB], (gpu.index, used)


def test_demo_and_replay_together_are_one_line() -> None:
    port = free_port()
    one_line_exit_2(
        run_export("--listen", f"127.0.0.1:{port}", "--demo", "--replay", str(FOUR)),
        "or --replay FILE",
    )


@pytest.mark.parametrize("given", [None, "node-z"])
def test_a_capture_without_a_host_is_labelled_with_this_machine(given: str | None) -> None:
    # A --query-gpu log names no host; dcgm-exporter's series always carry Hostname.
    log = ROOT / "snapshots" / "query-gpu-2x-a0s.csv"
    assert document(log).host is None
    flags = ("--hostname", given) if given else ()
    with running_exporter("--replay", str(log), "--at", "0", *flags) as exporter:
        values = series(exporter.metrics())
    hosts = {
        value for (name, labels), _ in values.items() if name == "DCGM_FI_DEV_FB_USED"
        for key, value in labels if key == "Hostname"
    }  # fmt: skip
    assert hosts == {given or socket.gethostname()}
