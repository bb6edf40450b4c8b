"""The GPU-hours ledger: who held GPUs over a span of history, who used them, what idling cost.

``thresholds`` (what counts as idle, held, waiting), ``promql`` (the queries that make
Prometheus do the counting, per group and step), ``prometheus`` (running them within the
server's limits and adding up the answers), ``snapshots`` (the same ledger from one machine's
recording), ``account`` (the ledger's values), ``render`` (table, CSV, JSON, chart).
"""
