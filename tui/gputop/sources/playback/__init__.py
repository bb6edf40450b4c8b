"""A recording played as a source: ``replay`` (seekable, pausable, following a growing file)
and ``seek`` (the one parser of ``--at`` and of the go-to dialog's times).
"""
