"""Recordings and their formats: which format a file is (``formats``, by content; ``format_names``
alone for the option parser), what the text logs share (``indexed``, ``following``, ``linelog``,
``stamps``, ``logs``), and the readers of dmon/pmon (``dmon``, ``dmon_columns``) and gputop's
own ``--log`` (``gputop_log``). nvidia-smi's XML and ``-q`` text are read by ``sources.smi``,
``--query-gpu`` CSV logs by ``sources.csvlog``.
"""
