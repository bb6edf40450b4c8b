"""Names that would drive the terminal (issue 26 §1) through the real readers into every text
output: `--once`, `report`, `cluster --once` and the error lines on stderr obey none of them
and show markup as written; `--json` keeps each string exact."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings

from gputop.cli.cluster import _print_once
from gputop.cli.main import main
from gputop.sinks.fleet_json import fleet_dict
from support.command import gputop_command
from support.fleet import MemoryFleet, demo_fleet
from support.hostile_names import (
    BOLD,
    CSI8,
    HOST,
    HOSTILE_TEXT,
    LINK,
    POD,
    RLO,
    TITLE,
    WIPE,
    obeyed,
)
from support.shortcuts import snapshot_from_path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
Q_TEXT = SNAPSHOTS / "rtx4090x8-procs-535-q.txt"
XML = SNAPSHOTS / "rtx3090x4-procs-v12.xml"
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""What splits a line of a text log (so a text log's name cannot hold it)."""
Q_TEXT_CANNOT_HOLD = LINE_BREAKS + "\t\x00"
"""Besides line breaks: a tab is layout to the `-q` reader (expanded, as nvidia-smi's own
columns are) and a NUL marks a binary file, refused with one line."""
XML_CHARS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def q_log(path: Path, gpu: str, process: str) -> Path:
    text = Q_TEXT.read_text()
    text = text.replace(": NVIDIA GeForce RTX 4090", f": {gpu}", 1)
    text = text.replace(": /usr/bin/python", f": {process}", 1)
    path.write_text(text)
    return path


def xml_log(path: Path, gpu: str, process: str) -> Path:
    entities = {"\r": "&#13;"}
    text = XML.read_text()
    text = text.replace(
        "<product_name>NVIDIA GeForce RTX 3090</product_name>",
        f"<product_name>{escape(gpu, entities)}</product_name>",
        1,
    )
    text = text.replace(
        "<process_name>python3</process_name>",
        f"<process_name>{escape(process, entities)}</process_name>",
        1,
    )
    path.write_text(text)
    return path


def csv_logs(folder: Path, gpu: str, process: str) -> tuple[Path, Path]:
    gpus, apps = folder / "gpu.csv", folder / "apps.csv"
    gpus.write_text(
        "timestamp, index, name, uuid, utilization.gpu [%], memory.used [MiB]\n"
        f"2024/01/04 15:02:11.123, 0, {gpu}, GPU-aaaa, 3 %, 500 MiB\n"
    )
    apps.write_text(
        "timestamp, gpu_uuid, pid, process_name, used_memory [MiB]\n"
        f"2024/01/04 15:02:11.600, GPU-aaaa, 4242, {process}, 480 MiB\n"
    )
    return gpus, apps


def outputs(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
    """`--once`, `report` (text and JSON) and `--json` of one recording."""
    found: dict[str, Any] = {}
    for name, command in (
        ("once", ("--once",)),
        ("json", ("--json",)),
    ):
        code, out, err = run(capsys, "--replay", *args, *command)
        assert code == 0, err
        found[name] = out
        found[f"{name} err"] = err
    code, out, err = run(capsys, "report", *args)
    assert code == 0, err
    found["report"], found["report err"] = out, err
    code, out, err = run(capsys, "report", *args, "--json")
    assert code == 0, err
    found["report json"] = json.loads(out)
    return found


def assert_shown_not_obeyed(found: dict[str, Any], benign: dict[str, Any], process: str) -> None:
    for name in ("once", "once err", "report", "report err", "json err"):
        assert obeyed(found[name]) == [], (name, found[name])
        # No line forged: as many lines as with plain names.
        assert found[name].count("\n") == benign[name].count("\n"), (name, found[name])
    assert LINK in found["once"]  # markup printed as itself
    assert obeyed(found["json"]) == []  # escaped by JSON itself (\u009b), the string exact
    document = json.loads(found["json"])
    names = [p["name"] for gpu in document["gpus"] for p in gpu["processes"]]
    assert process in names  # the true string, exact, as the reader read it


NAME = HOSTILE_TEXT.map(lambda text: f"A{text}")
BENIGN: dict[str, dict[str, Any]] = {}
"""Each format's outputs with plain names (worked out once)."""
EXAMPLES = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def benign(capsys: pytest.CaptureFixture[str], kind: str, *args: str | Path) -> dict[str, Any]:
    if kind not in BENIGN:
        BENIGN[kind] = outputs(capsys, *args)
    return BENIGN[kind]


def read_names(path: Path) -> tuple[str | None, list[str | None]]:
    """The first GPU's name and every process's, as the reader gives them to the model."""
    snapshot = snapshot_from_path(path)
    return snapshot.gpus[0].name, [p.name for g in snapshot.gpus for p in g.processes]


@EXAMPLES
@given(NAME, NAME)
def test_a_q_text_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gpu: str, process: str
) -> None:
    gpu, process = (
        text.translate({ord(c): None for c in Q_TEXT_CANNOT_HOLD}) for text in (gpu, process)
    )
    plain = benign(capsys, "q", q_log(tmp_path / "plain-q.txt", "Plain GPU", "python"))
    found = outputs(capsys, q_log(tmp_path / "q.txt", gpu, process))
    assert_shown_not_obeyed(found, plain, process)
    assert json.loads(found["json"])["gpus"][0]["name"] == gpu
    assert found["report json"]["gpus"][0]["name"] == gpu


@EXAMPLES
@given(NAME, NAME)
def test_an_xml_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gpu: str, process: str
) -> None:
    # XML carries newlines, C1 (the 8-bit CSI) and bidi controls; no other C0 control.
    gpu, process = (XML_CHARS.sub("", text) for text in (gpu, process))
    plain = benign(capsys, "xml", xml_log(tmp_path / "plain.xml", "Plain GPU", "python"))
    log = xml_log(tmp_path / "log.xml", gpu, process)
    found = outputs(capsys, log)
    # The reader's strings (it joins a name's lines), exact in --json.
    read_gpu, read_processes = read_names(log)
    assert read_processes[0] is not None
    assert_shown_not_obeyed(found, plain, read_processes[0])
    assert json.loads(found["json"])["gpus"][0]["name"] == read_gpu


@EXAMPLES
@given(NAME, NAME)
def test_csv_logs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gpu: str, process: str
) -> None:
    gpu, process = (
        text.translate({ord(c): None for c in LINE_BREAKS + ","}) for text in (gpu, process)
    )
    plain = tmp_path / "plain"
    plain.mkdir(exist_ok=True)
    benign_gpus, benign_apps = csv_logs(plain, "Plain GPU", "python")
    plain_outputs = benign(capsys, "csv", benign_gpus, "--apps", benign_apps)
    gpus, apps = csv_logs(tmp_path, gpu, process)
    found = outputs(capsys, gpus, "--apps", apps)
    assert_shown_not_obeyed(found, plain_outputs, process)
    assert json.loads(found["json"])["gpus"][0]["name"] == gpu


def test_the_issues_example_through_cat_v(tmp_path: Path) -> None:
    # `gputop --replay F --once | cat -v` printed ^[]0;pwned^G^[[2J…, and report too.
    log = q_log(tmp_path / "q.txt", f"{TITLE}{WIPE}A100", f"/usr/bin/py{CSI8}thon")
    for args in (f"--replay {log} --once", f"report {log}"):
        shown = subprocess.run(
            f"{shlex.join(gputop_command()[0])} {args} | cat -v",
            shell=True,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        assert "^[" not in shown and "^G" not in shown and "M-^[" not in shown, shown
        assert "\\x1b]0;pwned\\x07\\x1b[2JA100" in shown


def test_an_error_line_quoting_a_hostile_file_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / f"run{TITLE}\nforged{RLO}.xml"
    for args in (("--replay", missing, "--once"), ("report", missing)):
        code, out, err = run(capsys, *args)
        assert code != 0 and out == ""
        assert err.count("\n") == 1 and obeyed(err) == [], err
        assert "run\\x1b]0;pwned\\x07\\x0aforged\\u202e.xml" in err


def hostile_nodes() -> MemoryFleet:
    fleet = demo_fleet(error=f"bad_data: {TITLE}{BOLD}\nforged")
    nodes = tuple(
        dataclasses.replace(
            node,
            host=f"{node.host}{HOST}",
            snapshot=dataclasses.replace(node.snapshot, host=HOST),
        )
        for node in fleet.nodes
    )
    return MemoryFleet([dataclasses.replace(fleet, nodes=nodes)], {})


def test_cluster_once_and_its_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = hostile_nodes()
    out = tmp_path / "out.txt"
    with out.open("w") as stream:
        assert _print_once(source, stream, as_json=False, one_shot=False) == 0
    text = out.read_text()
    err = capsys.readouterr().err
    assert obeyed(text) == [] and obeyed(err) == [], (text, err)
    assert len(text.splitlines()) == 2 + len(source.answers[0].nodes)  # no line forged
    assert err.count("\n") == 1 and f"{BOLD}\\x0aforged" in err
    document = fleet_dict(source.answers[0])
    assert {node["host"] for node in document["nodes"]} == {
        node.host for node in source.answers[0].nodes
    }


def test_pod_names_from_a_docker_label_and_a_pod_log_directory(tmp_path: Path) -> None:
    # A Docker label anyone who may `docker run --label` sets, and a /var/log/pods directory:
    # the real command on a fake node (fake NVML "pods"; no kubelet).
    import os

    from support.fake_node import REAL, FakeNode

    node = FakeNode(tmp_path)
    docker, containerd = REAL["docker-systemd"], REAL["containerd-systemd-v2"]
    assert docker.container_id is not None and containerd.pod_uid is not None
    node.process(1818, docker.text, start=1818)
    node.process(4242, containerd.text, start=4242)
    node.docker_config(
        docker.container_id,
        f"render{TITLE}",
        {"io.kubernetes.pod.name": POD, "io.kubernetes.pod.namespace": f"{BOLD}ns"},
    )
    node.pod_logs(f"ml{CSI8}", f"trainer{TITLE}\nGPU 9", containerd.pod_uid, "trainer")
    command, environ = gputop_command("pods")
    environ = {k: v for k, v in environ.items() if not k.startswith(("KUBERNETES", "POD_"))}
    environ.update(
        GPUTOP_HOST_PROC=str(tmp_path / "proc"),
        GPUTOP_HOST_ROOT=str(tmp_path),
        GPUTOP_PODRESOURCES_SOCKET=str(tmp_path / "none.sock"),
    )
    me = tmp_path / "proc" / "self"
    me.mkdir(parents=True, exist_ok=True)
    (me / "status").write_text("Name:\tgputop\nNSpid:\t5000\t7\n")
    results = {
        mode: subprocess.run(
            [*command, mode],
            capture_output=True,
            text=True,
            env=environ,
            cwd=os.getcwd(),
            timeout=120,
            check=False,
        )
        for mode in ("--once", "--json")
    }
    once = results["--once"]
    assert once.returncode == 0, once.stderr
    assert obeyed(once.stdout) == [] and obeyed(once.stderr) == [], once.stdout
    assert "web-0\\x0a" in once.stdout and f"{BOLD}ns/" in once.stdout
    assert not any(line.lstrip().startswith("GPU 9") for line in once.stdout.splitlines())
    processes = {
        p["pid"]: p
        for gpu in json.loads(results["--json"].stdout)["gpus"]
        for p in gpu["processes"]
    }
    assert (processes[1818]["pod"], processes[1818]["namespace"]) == (POD, f"{BOLD}ns")
    assert (processes[4242]["pod"], processes[4242]["namespace"]) == (
        f"trainer{TITLE}\nGPU 9",
        f"ml{CSI8}",
    )
