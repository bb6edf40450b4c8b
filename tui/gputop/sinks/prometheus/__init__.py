"""Snapshots as Prometheus metrics, under dcgm-exporter's names and labels.

``dcgm`` holds what dcgm-exporter says of its own names (type, help text, label names,
clock-event names); ``labels`` builds each series' labels in dcgm-exporter's order;
``tracker`` keeps what one snapshot cannot say (clock events over a window, how long a GPU has
been waiting); ``render`` turns a snapshot into metric families and the text exposition.
The metrics themselves come from the field table (``gputop.model.fields``: each row's
``prometheus`` name and ``export_scale``), never from a list here.
"""
