"""Why is a GPU idle? Diagnosis, recording reports and CSV logs, from Snapshots only.

Nothing here imports Textual or NVML: these modules read the immutable snapshot model and
return values or text, so the TUI, the headless paths and the tests share them.
"""
