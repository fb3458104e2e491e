"""``kubectl apply --server-side`` with two field managers against the embedded server.

Field ownership as a real cluster keeps it: the second manager changing a field the first
applied is refused with upstream's conflict text (kubectl adds its advice), forcing takes
the field over, and a field the first manager stops applying is removed. The pure rules
are in ``tests/test_managed_fields.py``; this checks the wire and kubectl's handling.
"""

from __future__ import annotations

import json

from tests.e2e.conftest import Cluster


def _config_map(data: dict[str, str] | None) -> str:
    document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}}
    if data is not None:
        document["data"] = data
    return json.dumps(document)


def test_two_managers_conflict_force_and_removal(cluster: Cluster) -> None:
    first = cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=alice",
        "-f",
        "-",
        stdin=_config_map({"x": "1", "y": "2"}),
    )
    assert first.stdout.strip() == "configmap/ssa serverside-applied"
    shared = cluster.kubectl(
        "apply", "--server-side", "--field-manager=bob", "-f", "-", stdin=_config_map({"x": "1"})
    )
    assert shared.returncode == 0  # the same value: both own .data.x

    refused = cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=bob",
        "-f",
        "-",
        stdin=_config_map({"x": "2"}),
        check=False,
    )
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "alice": .data.x' in refused.stderr
    assert "--force-conflicts" in refused.stderr  # kubectl's advice follows the server's text

    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=bob",
        "--force-conflicts",
        "-f",
        "-",
        stdin=_config_map({"x": "2"}),
    )
    cluster.kubectl(  # alice no longer applies y (nor x, which bob took): y goes
        "apply", "--server-side", "--field-manager=alice", "-f", "-", stdin=_config_map(None)
    )
    stored = cluster.get_json("configmap", "ssa", "--show-managed-fields")
    assert stored["data"] == {"x": "2"}
    owners = {e["manager"]: e["fieldsV1"] for e in stored["metadata"]["managedFields"]}
    assert owners == {"bob": {"f:data": {"f:x": {}}}}  # alice owns nothing: no entry
    assert stored["metadata"]["managedFields"][0]["operation"] == "Apply"
    cluster.kubectl("delete", "configmap", "ssa")


PLAIN_POD = """apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: app, image: busybox, command: [sleep, "1000"]}]
"""


def test_moving_a_pod_from_client_side_to_server_side_apply_is_silent(cluster: Cluster) -> None:
    """Issue 28: kubectl's move to server-side apply takes over the client-side applier's
    fields; the service account the server gave the pod was among them, so kubectl's
    re-apply dropped it and warned that the pod update was forbidden. Upstream records a
    create's fields before mutating admission: the account is no one's."""
    cluster.kubectl("apply", "-f", "-", stdin=PLAIN_POD)
    moved = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=PLAIN_POD)
    assert (moved.stdout.strip(), moved.stderr) == ("pod/plain serverside-applied", "")
    pod = cluster.get_json("pod", "plain", "--show-managed-fields")
    assert pod["spec"]["serviceAccountName"] == "default"
    owned = json.dumps([e["fieldsV1"] for e in pod["metadata"]["managedFields"]])
    assert "serviceAccount" not in owned
    again = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=PLAIN_POD)
    assert again.stderr == ""
    cluster.kubectl("delete", "pod", "plain", "--wait=false")
