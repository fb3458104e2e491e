"""Tools for real clusters: ``render`` writes the entitlement objects for a Kubernetes 1.36
host cluster, ``apply`` applies them with server-side apply and prunes, ``doctor`` diagnoses
a cluster's DRA state live or from a dump. They talk to clusters only through
:mod:`allot.kube`, so they work the same against the embedded platform. Used by the CLI.
"""
