"""Client-side ``kubectl apply`` of a changed manifest, where kubectl's strategic merge
patch carries directives (issue 28): a finalizer dropped from the manifest is sent as
``$deleteFromPrimitiveList/finalizers`` and leaves the object; a Deployment switched to
``Recreate`` is sent with ``$retainKeys`` (the OpenAPI schema marks ``strategy`` so, as
upstream's does) and loses its defaulted ``rollingUpdate`` instead of being refused. The
directives' rules are in ``tests/test_patching.py``; this checks what the real kubectl
sends."""

from __future__ import annotations

import json

from tests.e2e.conftest import Cluster

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "switch"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "switch"}},
        "template": {
            "metadata": {"labels": {"app": "switch"}},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]},
        },
    },
}


def test_a_finalizer_dropped_from_the_manifest_leaves_the_object(cluster: Cluster) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"}}
    finalizers = ["example.com/a", "example.com/b"]
    cluster.apply({**config, "metadata": {"name": "fin", "finalizers": finalizers}})
    cluster.apply({**config, "metadata": {"name": "fin", "finalizers": finalizers[1:]}})
    assert cluster.get_json("configmap", "fin")["metadata"]["finalizers"] == ["example.com/b"]
    cluster.kubectl(
        "patch", "configmap", "fin", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    cluster.kubectl("delete", "configmap", "fin")


def test_a_deployment_switched_to_recreate_loses_rolling_update(cluster: Cluster) -> None:
    cluster.apply(DEPLOYMENT)
    assert cluster.get_json("deployment", "switch")["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    recreate = json.loads(json.dumps(DEPLOYMENT))
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    cluster.apply(recreate)  # refused as Invalid (rollingUpdate with Recreate) before
    assert cluster.get_json("deployment", "switch")["spec"]["strategy"] == {"type": "Recreate"}
    cluster.kubectl("delete", "deployment", "switch")
