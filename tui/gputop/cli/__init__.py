"""The command line: parse options; build sources, pipeline and views; run them.

The composition root: the only package that wires sources to views.
"""
