"""What listens on a socket: the exporter's ``/metrics`` server (``metrics_server``), the
browser view's server (``app_server``, textual-serve under gputop's page, origin checks and
limits), the socket its viewers read the one sampler's snapshots from
(``snapshot_publisher``), their TLS and basic-auth configuration (``config``) and how the page
is served (``options``). ``cli`` wires them to a pipeline; nothing here samples a GPU or draws
a screen. Import the module you need: ``metrics_server``, ``config`` and
``snapshot_publisher`` load neither Textual nor textual-serve, so ``gputop export`` stays
headless.
"""
