"""Widgets that render what they are handed: snapshots and history views."""
