"""Tenancy: virtual clusters per tenant, their sync with the host, and entitlement.

``names`` translates tenant objects to host names and back; ``entitlement`` compiles a
Tenant into the standard objects that enforce it (ValidatingAdmissionPolicies, bindings,
params, ResourceQuota); ``guard`` is the admission plugin of tenant clusters;
``controller`` keeps each Tenant's namespace, cluster and entitlement objects; ``sync``
moves objects between the tenants and the host. Assembled by :mod:`allot.platform`.
"""
