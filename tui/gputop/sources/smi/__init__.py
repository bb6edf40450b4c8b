"""nvidia-smi XML: parse documents and give random access to recordings."""
