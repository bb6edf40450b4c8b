"""What listens on a socket: the exporter's ``/metrics`` server (``metrics_server``), the
browser view's server (``app_server``, textual-serve under gputop's page, origin checks and
limits), their TLS and basic-auth configuration (``config``) and how the page is served
(``options``). ``cli`` wires them to a pipeline; nothing here samples a GPU or draws a
screen. Import the module you need: ``metrics_server`` and ``config`` load neither Textual
nor textual-serve, so ``gputop export`` stays headless.
"""
