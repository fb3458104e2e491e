"""The kubeconfig files of a data directory (``kubeconfigs/<cluster>.yaml``), rewritten in
place rather than replaced.

A user may point ``$KUBECONFIG`` at one of them (the README's ``export KUBECONFIG=$(allot
kubeconfig --path)``), and ``allot tenant connect`` then merges tenant contexts into it,
as ``vcluster connect`` edits the user's kubeconfig. ``allot up`` rewrites the file on
every start (the port, the CA or the token may have changed), so it updates only what it
owns: the cluster's own ``allot-<cluster>`` cluster, user and context, and the contexts
``allot tenant connect`` merged for tenants of this data directory (named
``allot_<tenant>_<data-dir>``, their cluster's CA this directory's), whose server and token
follow the platform. Every other entry is kept, and so is the current context while it
still names one; the context of a tenant that no longer exists is removed, and if it was
current the cluster's own context becomes current, with a note for the console.
Called by :class:`allot.registry.clusters.Registry`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import yaml

from allot.types import Obj

CONNECTED_PREFIX = "allot_"
"""The names ``allot tenant connect`` gives a tenant's cluster, user and context."""


@dataclass(frozen=True)
class Credentials:
    """What a kubeconfig of this platform points at: its URL (without ``/clusters/``),
    the CA file, and the bearer token of every cluster that exists. ``cluster_paths`` is
    False for the real engine (:mod:`allot.kubeengine`), whose one cluster is served at
    the URL itself."""

    server: str
    ca_cert: Path
    tokens: Mapping[str, str]
    cluster_paths: bool = True


@dataclass
class Rewritten:
    config: Obj
    notes: list[str] = field(default_factory=list)


def own_context(cluster: str) -> str:
    """The name of the cluster, user and context of ``cluster``'s own kubeconfig."""
    return f"allot-{cluster}"


def rewrite(existing: Obj | None, cluster: str, credentials: Credentials) -> Rewritten:
    """``existing`` (None: no file yet) with ``cluster``'s own entries and the connected
    tenant contexts of this platform brought up to date; see the module's docstring."""
    own = own_context(cluster)
    config: Obj = (
        dict(existing)
        if existing
        else {"apiVersion": "v1", "kind": "Config", "current-context": own}
    )
    _put(config, "clusters", own, "cluster", _cluster_entry(cluster, credentials))
    _put(config, "users", own, "user", {"token": credentials.tokens[cluster]})
    context = {"cluster": own, "user": own, "namespace": _namespace_of(config, own)}
    _put(config, "contexts", own, "context", context)
    gone = _follow_connected(config, credentials)
    result = Rewritten(config)
    current = str(config.get("current-context") or "")
    if current not in _names(config, "contexts"):
        config["current-context"] = own
        if current:
            why = f"tenant {gone[current]} no longer exists" if current in gone else "it is gone"
            result.notes.append(
                f'context "{current}" was current, but {why}; the current context is now "{own}"'
            )
    for name, tenant in sorted(gone.items()):
        if name != current:
            result.notes.append(f'context "{name}" removed: tenant {tenant} no longer exists')
    config.setdefault("preferences", {})
    return result


def _cluster_entry(cluster: str, credentials: Credentials) -> Obj:
    path = f"/clusters/{cluster}" if credentials.cluster_paths else ""
    return {
        "server": f"{credentials.server}{path}",
        "certificate-authority": str(credentials.ca_cert.resolve()),
    }


def _namespace_of(config: Obj, context: str) -> str:
    """The namespace the user set on the cluster's own context (default: ``default``)."""
    for entry in config.get("contexts") or []:
        if entry.get("name") == context:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


def _follow_connected(config: Obj, credentials: Credentials) -> dict[str, str]:
    """Point this platform's connected tenant contexts at its URL and tokens; remove
    those of tenants that are gone (with the cluster and user entries ``connect`` named
    after them). Returns the removed contexts' tenants by context name."""
    clusters = {e.get("name"): e.get("cluster") or {} for e in config.get("clusters") or []}
    gone: dict[str, str] = {}
    for entry in list(config.get("contexts") or []):
        name = str(entry.get("name") or "")
        context = entry.get("context") or {}
        cluster_name = str(context.get("cluster") or "")
        tenant = _connected_tenant(name, clusters.get(cluster_name), credentials)
        if tenant is None:
            continue
        if tenant not in credentials.tokens:
            gone[name] = tenant
            continue
        _put(config, "clusters", cluster_name, "cluster", _cluster_entry(tenant, credentials))
        if str(context.get("user") or "").startswith(CONNECTED_PREFIX):
            _put(config, "users", context["user"], "user", {"token": credentials.tokens[tenant]})
    config["contexts"] = [e for e in config.get("contexts") or [] if e.get("name") not in gone]
    used = {
        (section, (e.get("context") or {}).get(key))
        for e in config["contexts"]
        for section, key in (("clusters", "cluster"), ("users", "user"))
    }
    for section in ("clusters", "users"):
        config[section] = [
            e
            for e in config.get(section) or []
            if e.get("name") not in gone or (section, e.get("name")) in used
        ]
    return gone


def _connected_tenant(name: str, cluster: Obj | None, credentials: Credentials) -> str | None:
    """The tenant of a context ``allot tenant connect`` merged for this platform (by its
    name and its cluster's CA file), else None: other contexts are the user's."""
    if not name.startswith(CONNECTED_PREFIX) or cluster is None:
        return None
    if cluster.get("certificate-authority") != str(credentials.ca_cert.resolve()):
        return None
    path = urlparse(str(cluster.get("server") or "")).path.strip("/").split("/")
    if len(path) != 2 or path[0] != "clusters" or not path[1]:
        return None
    return path[1]


def _names(config: Obj, section: str) -> set[str]:
    return {str(e.get("name")) for e in config.get(section) or []}


def _put(config: Obj, section: str, name: str, key: str, value: Obj) -> None:
    """Set entry ``name`` of ``section`` to ``value``, where it was (else at the end)."""
    entries = list(config.get(section) or [])
    for position, entry in enumerate(entries):
        if entry.get("name") == name:
            entries[position] = {**entry, key: value}
            break
    else:
        entries.append({"name": name, key: value})
    config[section] = entries


def write(path: Path, cluster: str, credentials: Credentials) -> Rewritten:
    """Rewrite ``path`` (see :func:`rewrite`), atomically and readable by its owner only.
    A file that is not a kubeconfig mapping is replaced, with a note."""
    existing, notes = _read(path)
    result = rewrite(existing, cluster, credentials)
    result.notes[:0] = notes
    save(path, result.config)
    return result


def save(path: Path, config: Obj) -> None:
    """Write a kubeconfig atomically (a reader never sees half of it), owner-only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as stream:
            yaml.safe_dump(config, stream, sort_keys=False)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read(path: Path) -> tuple[Obj | None, list[str]]:
    try:
        loaded = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        return None, []
    except (OSError, yaml.YAMLError) as err:
        return None, [f"it could not be read ({err}); written anew"]
    if loaded is None:
        return None, []
    if not isinstance(loaded, dict):
        return None, ["it was not a kubeconfig mapping; written anew"]
    return loaded, []
