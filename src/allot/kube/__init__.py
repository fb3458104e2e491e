"""The one door to any cluster: a small client interface over the official client.

Everything that talks to a cluster (the simulated driver now; the tools for real clusters
later) uses :class:`allot.kube.client.Client`, so the same code runs against the embedded
platform and a real Kubernetes 1.36 cluster. Only this package imports ``kubernetes``.
"""
