"""Remote machines read from Prometheus (or scraped from their exporters directly).

``client`` speaks the HTTP API, ``families`` names the series read (from the field table),
``build`` turns one host's series into the model's Snapshot, ``window`` judges each GPU over a
window, and ``source`` puts them together as a ``FleetSource``.
"""
