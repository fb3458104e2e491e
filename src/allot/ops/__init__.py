"""Operations: what a platform team watches and bills on the fleet.

``capacity`` computes snapshots of devices, counters, claims and tenants; ``audit`` records
every allocation and release append-only and answers audit and usage queries; ``alerts``
evaluates the alert rules and raises them as Events, series and ``Alert`` objects;
``metrics`` renders ``/metrics``; ``dashboard`` serves ``/ui``. Assembled by
:mod:`allot.platform`.
"""
