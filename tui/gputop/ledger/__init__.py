"""The GPU-hours ledger: who held GPUs over a span of history, who used them, what idling cost.

``thresholds`` (what counts as idle, held, waiting), ``judge`` (one GPU's step filed by
that rule), ``promql`` (the queries: each GPU's mean per step, each sample read once),
``prometheus`` (running them in chunks within the server's limits, judging each GPU's steps
and adding them up by group), ``snapshots`` (the same ledger from one machine's recording),
``account`` (the ledger's values), ``render`` (table, CSV, JSON, chart).
"""
