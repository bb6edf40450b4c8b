"""Producers of snapshots. Nothing here imports Textual."""
