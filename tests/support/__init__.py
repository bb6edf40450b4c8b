"""Test support: deterministic apps and timelines for tests, snapshots and benchmarks."""
