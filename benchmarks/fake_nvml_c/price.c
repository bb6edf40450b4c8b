/*
 * What a real NVML call costs, spent in C: the fake NVML's priced mode for the benchmarks
 * (GPUTOP_FAKE_NVML_COSTS=FILE, GPUTOP_FAKE_NVML_PRICE_LIB=this library; see
 * tests/fakes/nvml_install.py).
 *
 * The Python fake calls gputop_fake_nvml_spend(cpu, wall) through ctypes, which lets go of
 * the GIL for the call, as a real driver call does: the calling thread is busy for `cpu`
 * seconds of its own CPU time, then sleeps what `wall` has beyond that (PCIe throughput
 * takes 21 ms of wall time for 0.8 ms of CPU). Spent in Python instead, a price would hold
 * the GIL and stall every other thread of the tool for the length of each call.
 *
 * Built alone (libgputop_price.so, for gputop and the Python peers) and into the fake
 * libnvidia-ml.so.1 that nvtop loads (fake_nvml.c includes it), so that each process has one
 * count of what was spent: gputop_fake_nvml_spent_ns().
 */

#ifndef GPUTOP_PRICE_C
#define GPUTOP_PRICE_C

#include <stdint.h>
#include <time.h>

#ifndef EXPORT
#define EXPORT __attribute__((visibility("default")))
#endif

static uint64_t price_spent_ns; /* thread CPU spent on prices, every thread */
static uint64_t price_calls;

static uint64_t price_clock_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

EXPORT void gputop_fake_nvml_spend(double cpu_s, double wall_s) {
  uint64_t wall_start = price_clock_ns(CLOCK_MONOTONIC);
  uint64_t start = price_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t want = cpu_s > 0 ? (uint64_t)(cpu_s * 1e9) : 0;
  uint64_t now = start;
  while (now - start < want)
    now = price_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  __atomic_fetch_add(&price_spent_ns, now - start, __ATOMIC_RELAXED);
  __atomic_fetch_add(&price_calls, 1, __ATOMIC_RELAXED);
  if (wall_s > cpu_s) {
    uint64_t until = wall_start + (uint64_t)(wall_s * 1e9);
    uint64_t at = price_clock_ns(CLOCK_MONOTONIC);
    if (at < until) {
      struct timespec rest = {(time_t)((until - at) / 1000000000u),
                              (long)((until - at) % 1000000000u)};
      nanosleep(&rest, NULL);
    }
  }
}

EXPORT uint64_t gputop_fake_nvml_spent_ns(void) {
  return __atomic_load_n(&price_spent_ns, __ATOMIC_RELAXED);
}

EXPORT uint64_t gputop_fake_nvml_priced_calls(void) {
  return __atomic_load_n(&price_calls, __ATOMIC_RELAXED);
}

#endif
