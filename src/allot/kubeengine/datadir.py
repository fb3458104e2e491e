"""Which engine a data directory belongs to, so that the two are never mixed.

The embedded engine keeps its objects in ``state.db`` (:data:`allot.registry.clusters.
STORE_FILE`); the real engine keeps etcd, its configuration and logs under ``kube/``.
``allot up`` of either engine refuses a directory the other made, and ``allot tenant``
serves a real-engine directory's tenants its own way (:mod:`allot.cli.kubetenant`).
Called by :mod:`allot.cli.up`, :mod:`allot.cli.tenant` and :mod:`allot.kubeengine.cluster`.
"""

from __future__ import annotations

from pathlib import Path

from allot.registry.clusters import STORE_FILE

EMBEDDED = "embedded"
KUBERNETES = "kubernetes"
ENGINES = (EMBEDDED, KUBERNETES)
KUBE_DIR = "kube"


class EngineMismatch(Exception):
    """A data directory made by one engine, started with the other."""

    def __init__(self, data_dir: Path, found: str, wanted: str) -> None:
        flag = "" if found == EMBEDDED else f" --engine {found}"
        super().__init__(
            f"{data_dir} holds a cluster of the {found} engine; the {wanted} engine never "
            f"uses it (start it with: allot up{flag} --data-dir {data_dir}, or choose "
            "another --data-dir)"
        )


def engine_of(data_dir: Path) -> str | None:
    """The engine that made ``data_dir``, or None for a new (or empty) directory."""
    if (data_dir / KUBE_DIR).is_dir():
        return KUBERNETES
    if (data_dir / STORE_FILE).exists():
        return EMBEDDED
    return None


def check_engine(data_dir: Path, wanted: str) -> None:
    """EngineMismatch when the other engine made ``data_dir``."""
    found = engine_of(data_dir)
    if found is not None and found != wanted:
        raise EngineMismatch(data_dir, found, wanted)
