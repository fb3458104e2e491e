"""The fault-injection suite: the platform killed with SIGKILL under load, then checked.

``world`` runs ``allot up`` as a killable process and builds the fleet, classes, quotas and
tenants of ``tests/scenarios/faults.yaml``; ``load`` is the steady load and the ledger of
acknowledged writes; ``checks`` the rules judged after each restart. Marked slow (it still
runs in CI); ``pytest tests/faults -s`` prints the figures.
"""
