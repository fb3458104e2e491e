"""``allot up`` rewrites the data directory's kubeconfigs on every start (new port, CA or
token) without losing what the user merged into them: the README's flow exports the host's
kubeconfig and ``allot tenant connect`` writes tenant contexts into that very file.

The connected files are made by ``allot.cli.kubeconfigs.connect`` itself, so these tests
follow the entries it really writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.apiserver.security import ensure_tls
from allot.cli import kubeconfigs as user_kubeconfigs
from allot.cli.up import host_client
from allot.registry.kubeconfigs import Credentials, rewrite, write

Obj = dict[str, Any]
TOKENS = {"host": "host-token", "legal-ai": "legal-token", "research-ai": "research-token"}


def _credentials(data: Path, port: int, tokens: dict[str, str] | None = None) -> Credentials:
    return Credentials(f"https://127.0.0.1:{port}", data / "pki" / "ca.crt", tokens or TOKENS)


def _platform(data: Path, port: int) -> None:
    """The kubeconfigs ``allot up`` writes for every cluster at ``port``."""
    for cluster in TOKENS:
        write(data / "kubeconfigs" / f"{cluster}.yaml", cluster, _credentials(data, port))


def _connect(data: Path, tenant: str, namespace: str | None = None) -> str:
    """``allot tenant connect TENANT`` with ``$KUBECONFIG`` at the host's kubeconfig."""
    name = user_kubeconfigs.context_name(tenant, data)
    tenant_config = yaml.safe_load((data / "kubeconfigs" / f"{tenant}.yaml").read_text())
    user_kubeconfigs.connect(data / "kubeconfigs" / "host.yaml", name, tenant_config, namespace)
    return name


def _load(path: Path) -> Obj:
    loaded: Obj = yaml.safe_load(path.read_text())
    return loaded


def _entry(config: Obj, section: str, name: str) -> Any:
    found = [e for e in config[section] if e["name"] == name]
    assert len(found) == 1, f"{section} {name}: {found}"
    return found[0][section[:-1]]


def test_a_first_write_is_the_clusters_own_context(tmp_path: Path) -> None:
    result = rewrite(None, "legal-ai", _credentials(tmp_path, 6443))
    assert result.notes == []
    assert result.config == {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "allot-legal-ai",
        "clusters": [
            {
                "name": "allot-legal-ai",
                "cluster": {
                    "server": "https://127.0.0.1:6443/clusters/legal-ai",
                    "certificate-authority": str((tmp_path / "pki" / "ca.crt").resolve()),
                },
            }
        ],
        "users": [{"name": "allot-legal-ai", "user": {"token": "legal-token"}}],
        "contexts": [
            {
                "name": "allot-legal-ai",
                "context": {
                    "cluster": "allot-legal-ai",
                    "user": "allot-legal-ai",
                    "namespace": "default",
                },
            }
        ],
        "preferences": {},
    }


def test_a_restart_keeps_the_connected_tenant_context_current(tmp_path: Path) -> None:
    """The reported bug: after Ctrl-C and ``allot up`` again (here on another port),
    kubectl must still talk to the tenant, at the new port, and disconnect must work."""
    _platform(tmp_path, 6443)
    context = _connect(tmp_path, "legal-ai", namespace="team")
    host_file = tmp_path / "kubeconfigs" / "host.yaml"
    _platform(tmp_path, 7443)
    config = _load(host_file)
    assert config["current-context"] == context
    assert _entry(config, "clusters", context)["server"] == (
        "https://127.0.0.1:7443/clusters/legal-ai"
    )
    assert _entry(config, "users", context) == {"token": "legal-token"}
    connected = _entry(config, "contexts", context)
    assert connected["namespace"] == "team"
    assert connected["extensions"] == [
        {"name": user_kubeconfigs.PREVIOUS, "extension": "allot-host"}
    ]
    assert _entry(config, "clusters", "allot-host")["server"] == (
        "https://127.0.0.1:7443/clusters/host"
    )
    assert user_kubeconfigs.disconnect(host_file) == (context, "allot-host")
    assert _load(host_file)["current-context"] == "allot-host"


def test_a_new_token_reaches_the_connected_context(tmp_path: Path) -> None:
    _platform(tmp_path, 6443)
    context = _connect(tmp_path, "research-ai")
    host_file = tmp_path / "kubeconfigs" / "host.yaml"
    tokens = {**TOKENS, "research-ai": "rotated", "host": "rotated-host"}
    write(host_file, "host", _credentials(tmp_path, 6443, tokens))
    config = _load(host_file)
    assert _entry(config, "users", context) == {"token": "rotated"}
    assert _entry(config, "users", "allot-host") == {"token": "rotated-host"}


def test_the_users_other_entries_and_choices_are_kept(tmp_path: Path) -> None:
    """Contexts the user added, the namespace set on the host's context, other top-level
    keys: untouched; a context the user chose stays current."""
    _platform(tmp_path, 6443)
    host_file = tmp_path / "kubeconfigs" / "host.yaml"
    config = _load(host_file)
    mine = {"name": "kind", "context": {"cluster": "kind", "user": "kind"}}
    config["clusters"].append({"name": "kind", "cluster": {"server": "https://10.0.0.1"}})
    config["users"].append({"name": "kind", "user": {"token": "t"}})
    config["contexts"].append(mine)
    config["contexts"][0]["context"]["namespace"] = "ops"
    config["current-context"] = "kind"
    config["preferences"] = {"colors": True}
    host_file.write_text(yaml.safe_dump(config))
    _platform(tmp_path, 7443)
    after = _load(host_file)
    assert after["current-context"] == "kind"
    assert _entry(after, "contexts", "kind") == mine["context"]
    assert _entry(after, "clusters", "kind") == {"server": "https://10.0.0.1"}
    assert _entry(after, "contexts", "allot-host")["namespace"] == "ops"
    assert after["preferences"] == {"colors": True}


def test_the_context_of_a_deleted_tenant_goes_and_the_host_becomes_current(
    tmp_path: Path,
) -> None:
    _platform(tmp_path, 6443)
    legal = _connect(tmp_path, "legal-ai")
    research = _connect(tmp_path, "research-ai")  # current; legal-ai's stays
    host_file = tmp_path / "kubeconfigs" / "host.yaml"
    tokens = {"host": "host-token"}  # both tenants deleted since
    result = write(host_file, "host", _credentials(tmp_path, 6443, tokens))
    assert result.notes == [
        f'context "{research}" was current, but tenant research-ai no longer exists; '
        'the current context is now "allot-host"',
        f'context "{legal}" removed: tenant legal-ai no longer exists',
    ]
    config = _load(host_file)
    assert config["current-context"] == "allot-host"
    for section in ("clusters", "users", "contexts"):
        assert [e["name"] for e in config[section]] == ["allot-host"]


def test_another_platforms_connected_context_is_left_alone(tmp_path: Path) -> None:
    """A context connected to a platform of another data directory (another CA) is not
    this platform's to update or remove, even for a tenant this one does not have."""
    other = tmp_path / "other"
    mine = tmp_path / "mine"
    _platform(other, 9443)
    _platform(mine, 6443)
    name = user_kubeconfigs.context_name("legal-ai", other)
    tenant_config = yaml.safe_load((other / "kubeconfigs" / "legal-ai.yaml").read_text())
    host_file = mine / "kubeconfigs" / "host.yaml"
    user_kubeconfigs.connect(host_file, name, tenant_config, None)
    before = _load(host_file)
    result = write(host_file, "host", _credentials(mine, 7443, {"host": "host-token"}))
    assert result.notes == []
    after = _load(host_file)
    assert after["current-context"] == name
    for section in ("clusters", "users", "contexts"):
        assert _entry(after, section, name) == _entry(before, section, name)


def test_a_file_that_is_not_a_kubeconfig_is_written_anew_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfigs" / "host.yaml"
    path.parent.mkdir()
    path.write_text("- just\n- a list\n")
    result = write(path, "host", _credentials(tmp_path, 6443))
    assert result.notes == ["it was not a kubeconfig mapping; written anew"]
    assert _load(path)["current-context"] == "allot-host"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("connected", [False, True])
def test_the_platforms_own_client_uses_the_host_context(tmp_path: Path, connected: bool) -> None:
    """``allot tenant list``, the fleet publisher and every other platform command talk to
    the host even while a tenant's context is current in the host's kubeconfig."""
    ensure_tls(tmp_path / "pki")
    _platform(tmp_path, 6443)
    if connected:
        _connect(tmp_path, "legal-ai")
    client = host_client(tmp_path / "kubeconfigs" / "host.yaml")
    try:
        assert client._api.configuration.host == "https://127.0.0.1:6443/clusters/host"
    finally:
        client.close()
