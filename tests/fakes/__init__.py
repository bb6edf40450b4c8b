"""Test doubles. ``tests/`` is on sys.path in pytest (``tests/conftest.py``), so import them as
``fakes.nvml_fake``; in a subprocess put ``tests/fakes`` on PYTHONPATH (see ``sitecustomize``).
"""
