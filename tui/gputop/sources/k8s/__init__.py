"""Kubernetes: the kubelet's PodResources API (optional: ``pip install gputop-tui[k8s]``)."""
