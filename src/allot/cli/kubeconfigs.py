"""The user's kubeconfig, edited the way ``vcluster connect`` and ``disconnect`` edit it.

``allot tenant connect NAME`` merges a context for the tenant's virtual cluster into the
kubeconfig kubectl writes to (the first file of ``$KUBECONFIG``, else ``~/.kube/config``)
and makes it current, so plain ``kubectl`` talks to the tenant. The cluster, user and
context entries are all named ``allot_<tenant>_<data-dir name>`` (vCluster names them
``vcluster_<name>_<namespace>_<context>``); the context remembers the context that was
current before in an extension, so ``allot tenant disconnect`` switches back and removes the
three entries; ``allot tenant delete`` removes them too (``forget``). Every other entry of
the file is kept as it was; the file is replaced atomically with mode 0600. When that file
is one of the platform's own kubeconfigs, ``allot up`` keeps these contexts on restart and
brings their server and token up to date (:mod:`allot.registry.kubeconfigs`). Called by
``allot.cli.tenant``.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from allot.registry.kubeconfigs import CONNECTED_PREFIX, save
from allot.types import Obj

PREFIX = CONNECTED_PREFIX
PREVIOUS = "allot.dev/previous-context"


class KubeconfigError(Exception):
    """The user's kubeconfig cannot be read, or holds no allot context to leave."""


def user_kubeconfig() -> Path:
    """The file kubectl writes contexts to."""
    files = [f for f in os.environ.get("KUBECONFIG", "").split(os.pathsep) if f]
    return Path(files[0]) if files else Path.home() / ".kube" / "config"


def context_name(tenant: str, data_dir: Path) -> str:
    return f"{PREFIX}{tenant}_{data_dir.resolve().name or 'allot'}"


def connect(path: Path, name: str, tenant_config: Obj, namespace: str | None) -> str:
    """Merge the tenant's cluster, user and context as ``name`` and make it current;
    returns the context that was current before ("" if none)."""
    config = _load(path)
    previous = str(config.get("current-context") or "")
    if previous.startswith(PREFIX):  # hopping between tenants keeps the original
        previous = _previous_of(config, previous)
    cluster = tenant_config["clusters"][0]["cluster"]
    user = tenant_config["users"][0]["user"]
    context: Obj = {"cluster": name, "user": name}
    if namespace:
        context["namespace"] = namespace
    if previous:
        context["extensions"] = [{"name": PREVIOUS, "extension": previous}]
    _put(config, "clusters", name, "cluster", cluster)
    _put(config, "users", name, "user", user)
    _put(config, "contexts", name, "context", context)
    config["current-context"] = name
    save(path, config)
    return previous


def disconnect(path: Path) -> tuple[str, str]:
    """Leave the current allot context: (the context left, the context now current)."""
    config = _load(path)
    current = str(config.get("current-context") or "")
    if not current.startswith(PREFIX):
        raise KubeconfigError(
            f"the current context of {path} is {current or 'unset'!r}, not an allot tenant "
            "context (allot tenant connect NAME sets one)"
        )
    previous = _previous_of(config, current)
    for section in ("clusters", "users", "contexts"):
        config[section] = [e for e in config.get(section) or [] if e.get("name") != current]
    if previous:
        config["current-context"] = previous
    else:
        config.pop("current-context", None)
    save(path, config)
    return current, previous


def forget(path: Path, name: str) -> tuple[bool, str | None]:
    """Remove context ``name`` of a deleted tenant (as ``vcluster delete`` does): (whether
    it was there, the context now current if it was the current one, "" for none)."""
    if not path.exists():
        return False, None
    config = _load(path)
    if not any(e.get("name") == name for e in config.get("contexts") or []):
        return False, None
    current = config.get("current-context") == name
    previous = _previous_of(config, name)
    for section in ("clusters", "users", "contexts"):
        config[section] = [e for e in config.get(section) or [] if e.get("name") != name]
    if current:
        if previous:
            config["current-context"] = previous
        else:
            config.pop("current-context", None)
    save(path, config)
    return True, previous if current else None


def _previous_of(config: Obj, name: str) -> str:
    for entry in config.get("contexts") or []:
        if entry.get("name") == name:
            for extension in (entry.get("context") or {}).get("extensions") or []:
                if extension.get("name") == PREVIOUS:
                    return str(extension.get("extension") or "")
    return ""


def _put(config: Obj, section: str, name: str, key: str, value: Obj) -> None:
    entries = [e for e in config.get(section) or [] if e.get("name") != name]
    entries.append({"name": name, key: value})
    config[section] = entries


def _load(path: Path) -> Obj:
    if not path.exists():
        return {"apiVersion": "v1", "kind": "Config", "preferences": {}}
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {err}") from None
    if loaded is None:
        return {"apiVersion": "v1", "kind": "Config", "preferences": {}}
    if not isinstance(loaded, dict):
        raise KubeconfigError(f"cannot read kubeconfig {path}: not a kubeconfig mapping")
    return loaded
