"""allot: GPU entitlements for multi-tenant Kubernetes Dynamic Resource Allocation.

The package is layered (see docs/architecture.md), from the bottom: ``types`` and ``api``
(wire models and the claim rules), ``cel`` (the DRA selector environment), ``allocator``
(the structured allocator and placement), ``validation`` (the API server's checks),
``store`` and ``kube`` (state and the one client interface), ``driver`` (the simulated
NVIDIA driver), ``simulation`` and ``lint``, ``manifests``, ``registry`` (the write path of
every cluster: handlers, admission, quota), ``controllers``, ``tenancy``, ``ops``,
``apiserver`` (HTTP), ``platform``, ``cluster`` and ``kubeengine`` (the embedded platform,
the tools for real clusters, and real Kubernetes run on loopback), ``cli`` (the ``allot``
command) and ``demo``.
"""

__version__ = "0.1.0"
