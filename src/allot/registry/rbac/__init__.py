"""Role-based access control, per cluster, as Kubernetes 1.36's RBAC authorizer.

``identity`` is who a request runs as; ``rules`` the pure matching and covering of policy
rules; ``authorizer`` answers a request's attributes from a cluster's roles and bindings;
``bootstrap`` creates the default roles in every cluster; ``escalation`` is the admission
check that a user grants only what it holds; ``satokens`` issues ServiceAccount tokens.
Called by :mod:`allot.apiserver` (authentication, authorization, access reviews) and by
:class:`~allot.registry.clusters.Registry`.
"""
