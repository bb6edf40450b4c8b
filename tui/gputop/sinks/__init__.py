"""Views that write snapshots out: JSON, CSV, nvidia-smi XML. No Textual."""
