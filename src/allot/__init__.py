"""allot: GPU entitlements for multi-tenant Kubernetes Dynamic Resource Allocation.

The package is layered (see docs/architecture.md): ``api`` holds the wire models,
``cel`` the DRA selector environment, ``validation`` the API server's checks,
``manifests`` the reading of user files, and ``cli`` the ``allot`` command.
"""

__version__ = "0.1.0"
