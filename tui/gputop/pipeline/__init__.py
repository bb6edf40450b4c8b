"""The one pipeline: a source's snapshots filed into history and handed to views as ticks."""
