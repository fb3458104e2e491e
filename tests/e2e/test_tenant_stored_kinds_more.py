"""A Helm-rendered web application (Deployment, Service, Ingress, HorizontalPodAutoscaler,
NetworkPolicy, PersistentVolumeClaim, and a PriorityClass its pod uses) applies in a
tenant's virtual cluster with the real kubectl, as on vCluster: no ``no matches for kind
"Ingress"``. The kinds are listed with upstream's columns by short name, ``kubectl
autoscale``, ``create ingress`` and ``create priorityclass`` post their protobuf bodies,
and the pod's priority is resolved in the tenant's cluster and kept by its host twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow
TENANT = "legal-ai"
CHART = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: web-critical}
value: 100000
description: The web tier.
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: web-data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      priorityClassName: web-critical
      containers:
        - name: web
          image: nginx
          command: [sleep, "3600"]
          resources: {requests: {cpu: 100m}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx
  tls: [{hosts: [web.example.com], secretName: web-tls}]
  rules:
    - host: web.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {service: {name: web, port: {name: http}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
    - ports: [{port: 8080, protocol: TCP}]
"""


def test_a_web_chart_with_ingress_hpa_netpol_pvc_and_priority_applies_in_a_tenant(
    tmp_path: Path,
) -> None:
    with seed_platform(tmp_path) as tenancy:
        applied = tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=CHART).stdout
        assert applied.splitlines() == [
            "priorityclass.scheduling.k8s.io/web-critical created",
            "persistentvolumeclaim/web-data created",
            "deployment.apps/web created",
            "service/web created",
            "ingress.networking.k8s.io/web created",
            "horizontalpodautoscaler.autoscaling/web created",
            "networkpolicy.networking.k8s.io/web created",
        ]
        again = tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=CHART).stdout
        assert all(line.endswith(" unchanged") for line in again.splitlines()), again
        _tables_have_upstream_columns(tenancy)
        for kind in ("ing/web", "hpa/web", "netpol/web", "pvc/web-data", "pc/web-critical"):
            described = tenancy.as_tenant(TENANT, "describe", kind).stdout
            assert described.startswith("Name:"), described
        for field in ("ingress.spec.rules", "hpa.spec.maxReplicas", "pc.preemptionPolicy"):
            explained = tenancy.as_tenant(TENANT, "explain", field).stdout
            assert f"FIELD: {field.rsplit('.', 1)[1]}" in explained, explained
        _generators_post_whole_objects(tenancy)
        _the_pod_has_its_class_s_priority(tenancy)


def _rows(tenancy: Tenancy, *args: str) -> list[list[str]]:
    return [line.split() for line in tenancy.as_tenant(TENANT, "get", *args).stdout.splitlines()]


def _tables_have_upstream_columns(tenancy: Tenancy) -> None:
    ingresses = _rows(tenancy, "ing")
    assert ingresses[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert ingresses[1][:4] == ["web", "nginx", "web.example.com", "80,"]
    autoscalers = _rows(tenancy, "hpa")
    assert autoscalers[0] == [
        "NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"
    ]  # fmt: skip
    assert autoscalers[1][:6] == ["web", "Deployment/web", "cpu:", "<unknown>/70%", "1", "5"]
    assert _rows(tenancy, "netpol")[1][:2] == ["web", "app=web"]
    claims = _rows(tenancy, "pvc", "-o", "wide")
    assert claims[0] == [
        "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS", "AGE", "VOLUMEMODE",
    ]  # fmt: skip
    assert claims[1][:3] == ["web-data", "Pending", "standard"]  # waits for a consumer
    assert claims[1][-1] == "Filesystem"
    classes = _rows(tenancy, "pc")
    assert classes[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert [row[:3] for row in classes[1:]] == [
        ["system-cluster-critical", "2000000000", "false"],
        ["system-node-critical", "2000001000", "false"],
        ["web-critical", "100000", "false"],
    ]
    together = tenancy.as_tenant(TENANT, "get", "ing,hpa,netpol,pvc,pc").stdout
    for name in ("ingress.networking.k8s.io/web", "horizontalpodautoscaler.autoscaling/web",
                 "networkpolicy.networking.k8s.io/web", "persistentvolumeclaim/web-data",
                 "priorityclass.scheduling.k8s.io/web-critical"):  # fmt: skip
        assert name in together, name


def _generators_post_whole_objects(tenancy: Tenancy) -> None:
    tenancy.as_tenant(TENANT, "create", "deployment", "api", "--image=busybox", "--replicas=0")
    scaled = tenancy.as_tenant(
        TENANT, "autoscale", "deployment", "api", "--min=1", "--max=3", "--cpu-percent=50"
    )
    assert scaled.stdout.strip() == "horizontalpodautoscaler.autoscaling/api autoscaled"
    spec = tenancy.tenant_json(TENANT, "hpa", "api")["spec"]
    assert (spec["minReplicas"], spec["maxReplicas"]) == (1, 3)
    assert spec["metrics"][0]["resource"]["target"] == {
        "type": "Utilization",
        "averageUtilization": 50,
    }
    created = tenancy.as_tenant(
        TENANT, "create", "ingress", "api", "--class=nginx",
        "--rule=api.example.com/v1*=api:8080,tls=api-tls",
    )  # fmt: skip
    assert created.stdout.strip() == "ingress.networking.k8s.io/api created"
    rule = tenancy.tenant_json(TENANT, "ingress", "api")["spec"]["rules"][0]
    assert rule["http"]["paths"][0] == {
        "path": "/v1",
        "pathType": "Prefix",
        "backend": {"service": {"name": "api", "port": {"number": 8080}}},
    }
    made = tenancy.as_tenant(TENANT, "create", "priorityclass", "batch", "--value=10")
    assert made.stdout.strip() == "priorityclass.scheduling.k8s.io/batch created"
    refused = tenancy.as_tenant(
        TENANT, "run", "stray", "--image=busybox", "--overrides",
        '{"spec": {"priorityClassName": "gold"}}', check=False,
    )  # fmt: skip
    assert 'pods "stray" is forbidden: no PriorityClass with name gold was found' in (
        refused.stderr
    )


def _the_pod_has_its_class_s_priority(tenancy: Tenancy) -> None:
    def pod() -> dict[str, object] | None:
        items = tenancy.tenant_json(TENANT, "pods", "-l", "app=web")["items"]
        return items[0] if items else None

    found = tenancy.wait(pod, "the web pod")
    assert (found["spec"]["priority"], found["spec"]["preemptionPolicy"]) == (
        100000, "PreemptLowerPriority"
    )  # fmt: skip
    name = found["metadata"]["name"]

    def twin() -> dict[str, object] | None:
        items = tenancy.host_json("pods", "-n", f"tenant-{TENANT}")["items"]
        return next((p for p in items if p["metadata"]["name"].startswith(name)), None)

    host_pod = tenancy.wait(twin, "the web pod's twin")
    assert host_pod["spec"]["priority"] == 100000
