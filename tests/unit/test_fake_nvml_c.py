"""The C library that stands in for ``libnvidia-ml.so.1`` under nvtop in
``benchmarks/bench_tui.py --side-by-side`` (benchmarks/fake_nvml_c).

nvtop is not needed: a small C program loads the library as nvtop does (``dlopen`` of
``libnvidia-ml.so.1``, ``dlsym`` of the versioned names first, nvtop's own struct layouts,
the v1 process entries) and prints what it is told, tick by tick. It must see the scenario
the Python tools see in the same run: the same GPUs, the same moving utilization, the same
processes; and the library must report the CPU its Python took on SIGUSR1.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
ROUNDS = 3
PIDS = [4242, 4343, 4444, 4545, 4646, 4747]

DRIVER = r"""
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { unsigned gpu, memory; } utilization_t;
typedef struct { unsigned long long total, free, used; } memory_t;
typedef struct { unsigned pid; unsigned long long used_memory; } process_v1_t;

static void *lib;
static void *need(const char *a, const char *b) {
  void *f = dlsym(lib, a);
  if (!f && b) f = dlsym(lib, b);
  if (!f) { printf("missing %s\n", a); exit(3); }
  return f;
}

int main(void) {
  lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
  if (!lib) { printf("dlopen: %s\n", dlerror()); return 2; }
  int (*init)(void) = need("nvmlInit_v2", "nvmlInit");
  int (*count_of)(unsigned *) = need("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  int (*handle_of)(unsigned, void **) =
      need("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  int (*name_of)(void *, char *, unsigned) = need("nvmlDeviceGetName", NULL);
  int (*rates_of)(void *, utilization_t *) = need("nvmlDeviceGetUtilizationRates", NULL);
  int (*memory_of)(void *, memory_t *) = need("nvmlDeviceGetMemoryInfo", NULL);
  int (*link_width)(void *, unsigned *) = need("nvmlDeviceGetMaxPcieLinkWidth", NULL);
  int (*compute)(void *, unsigned *, process_v1_t *) =
      need("nvmlDeviceGetComputeRunningProcesses", NULL);
  const char *(*error_text)(int) = need("nvmlErrorString", NULL);
  if (init() != 0) return 4;
  unsigned count = 0;
  count_of(&count);
  for (int round = 0; round < ROUNDS; ++round) {
    for (unsigned i = 0; i < count; ++i) {
      void *device;
      char name[96];
      utilization_t rates;
      memory_t memory;
      unsigned width;
      handle_of(i, &device);
      name_of(device, name, sizeof name);
      rates_of(device, &rates);
      memory_of(device, &memory);
      int pcie = link_width(device, &width);
      unsigned listed = 0;
      process_v1_t entries[64];
      int sized = compute(device, &listed, NULL);
      if (sized != 0 && sized != 7) return 5;
      compute(device, &listed, entries);
      printf("{\"round\": %d, \"gpu\": %u, \"name\": \"%s\", \"util\": %u, \"used\": %llu,"
             " \"pcie\": \"%s\", \"pids\": [", round, i, name, rates.gpu, memory.used,
             error_text(pcie));
      for (unsigned p = 0; p < listed; ++p)
        printf("%s[%u, %llu]", p ? ", " : "", entries[p].pid, entries[p].used_memory);
      printf("]}\n");
    }
  }
  fflush(stdout);
  raise(SIGUSR1);
  return 0;
}
"""

HELPER = """
import json, sys
from pathlib import Path
import bench_tui
folder = Path(sys.argv[1])
bench_tui.build_fake_nvml_c(folder)
fake = bench_tui.bench_fake()
expected = [
    {"gpu": gpu.index, "name": gpu.name, "util": round(gpu.utilization.gpu),
     "used": gpu.memory.used + (gpu.memory.reserved or 0),
     "pids": [[p.pid, p.memory_used] for p in gpu.processes if p.type in ("C", "C+G")]}
    for snapshot in fake.snapshots for gpu in snapshot.gpus
]
print(json.dumps({"env": bench_tui.fake_nvml_c_env(folder), "expected": expected}))
"""


def test_a_c_program_sees_the_scenario_the_python_tools_see(tmp_path: Path) -> None:
    scenario = {
        "GPUTOP_BENCH_BOX": "4x4090",
        # Two processes on the first two cards: v1 entries are 16 bytes, pynvml's v3 are 24.
        "GPUTOP_BENCH_PROCESSES": "6",
        "GPUTOP_BENCH_TICKS": str(ROUNDS),
        "GPUTOP_BENCH_PIDS": ",".join(map(str, PIDS)),
    }
    base_env = {**os.environ, **scenario, "PYTHONPATH": str(ROOT / "tui")}
    prepared = subprocess.run(
        [sys.executable, "-c", HELPER, str(tmp_path / "lib")],
        cwd=BENCHMARKS,
        env=base_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert prepared.returncode == 0, prepared.stderr
    plan = json.loads(prepared.stdout)
    driver = tmp_path / "driver"
    source = tmp_path / "driver.c"
    source.write_text(DRIVER.replace("ROUNDS", str(ROUNDS)))
    subprocess.run(["gcc", str(source), "-o", str(driver), "-ldl"], check=True, timeout=60)
    log = tmp_path / "fake-cpu.log"
    ran = subprocess.run(
        [str(driver)],
        env={**base_env, **plan["env"], "GPUTOP_BENCH_FAKE_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    seen = [json.loads(line) for line in ran.stdout.splitlines()]
    assert [row.pop("round") for row in seen] == [r for r in range(ROUNDS) for _ in range(4)]
    # nvtop's PCIe link queries are answered, with NotSupported (the model has no figures).
    assert {row.pop("pcie") for row in seen} == {"fake NVML error 3"}
    assert seen == plan["expected"]
    # The values move (the scenario's sine wave), the live PIDs are the ones listed.
    assert len({row["util"] for row in seen if row["gpu"] == 0}) == ROUNDS
    assert sorted(p[0] for row in seen[:4] for p in row["pids"]) == PIDS
    assert [len(row["pids"]) for row in seen[:4]] == [2, 2, 1, 1]
    # SIGUSR1 made the library write the CPU its Python took, the counting's cost, and
    # the part of it spent on prices (none: this fake is not priced).
    inside_ns, counting_ns, price_ns = (int(field) for field in log.read_text().split())
    assert inside_ns > 0 and counting_ns > 0 and price_ns == 0


def test_the_c_fake_charges_real_prices_in_c_when_asked(tmp_path: Path) -> None:
    """GPUTOP_FAKE_NVML_COSTS: each call the C program makes spends its H200 price in the
    library (price.c), and the log's third number says how much of the fake's time that was."""
    scenario = {
        "GPUTOP_BENCH_BOX": "4x4090",
        "GPUTOP_BENCH_PROCESSES": "6",
        "GPUTOP_BENCH_TICKS": str(ROUNDS),
        "GPUTOP_BENCH_PIDS": ",".join(map(str, PIDS)),
    }
    base_env = {**os.environ, **scenario, "PYTHONPATH": str(ROOT / "tui")}
    prepared = subprocess.run(
        [sys.executable, "-c", HELPER, str(tmp_path / "lib")],
        cwd=BENCHMARKS,
        env=base_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert prepared.returncode == 0, prepared.stderr
    plan = json.loads(prepared.stdout)
    driver = tmp_path / "driver"
    source = tmp_path / "driver.c"
    source.write_text(DRIVER.replace("ROUNDS", str(ROUNDS)))
    subprocess.run(["gcc", str(source), "-o", str(driver), "-ldl"], check=True, timeout=60)
    log = tmp_path / "fake-cpu.log"
    priced = {
        "GPUTOP_FAKE_NVML_COSTS": str(ROOT / "snapshots" / "nvml-prices-h200.tsv"),
        "GPUTOP_FAKE_NVML_PRICE_LIB": str(tmp_path / "lib" / "libnvidia-ml.so.1"),
    }
    ran = subprocess.run(
        [str(driver)],
        env={**base_env, **plan["env"], **priced, "GPUTOP_BENCH_FAKE_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    inside_ns, _, price_ns = (int(field) for field in log.read_text().split())
    # Per GPU and round: utilization 14.6 us, memory 28.1 us, the compute list twice 43.6 us.
    floor_ns = ROUNDS * 4 * (14.6 + 28.1 + 2 * 43.6) * 1000
    assert floor_ns <= price_ns <= inside_ns


def test_a_price_spent_in_c_is_cpu_on_the_calling_thread_with_the_gil_let_go(
    tmp_path: Path,
) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_tui
    finally:
        sys.path.remove(str(BENCHMARKS))
    library = ctypes.CDLL(str(bench_tui.build_price_library(tmp_path)))
    spend = library.gputop_fake_nvml_spend
    spend.argtypes = (ctypes.c_double, ctypes.c_double)
    spent = library.gputop_fake_nvml_spent_ns
    spent.restype = ctypes.c_uint64
    beside = 0
    running = threading.Event()
    done = threading.Event()

    def count() -> None:
        nonlocal beside
        running.set()
        while not done.is_set():
            beside += 1

    other = threading.Thread(target=count)
    # Python hands the GIL over only every 0.2 s now: a price spent holding it (in Python)
    # would keep the other thread out for all of its 50 ms.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.2)
    other.start()
    running.wait()
    try:
        wall, cpu = time.perf_counter(), time.thread_time()
        before = beside
        spend(0.03, 0.05)  # 30 ms busy, 50 ms in all
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        moved = beside - before
    finally:
        done.set()
        other.join()
        sys.setswitchinterval(switch)
    assert cpu >= 0.03 and wall >= 0.05
    assert spent() >= 30_000_000
    assert moved > 0  # the other Python thread ran meanwhile: the GIL was let go
