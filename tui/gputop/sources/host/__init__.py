"""Facts about processes from the host: /proc."""
