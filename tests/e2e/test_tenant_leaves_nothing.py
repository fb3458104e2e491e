"""Deleting a tenant leaves nothing of it (issue 14, item 5): a tenant re-created under the
same name starts empty (no objects, no logs of its old pods, no files under the data
directory) and sees the host's slices trimmed to its classes, as it did the first time; the
admission audit forgets a removed cluster and is capped in size."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from allot.cli.main import main as allot
from allot.registry.clusters import Registry
from tests.e2e.tenancy import REPO, SEEDS, Tenancy, seed_platform

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
POD = "contract-summarizer"


def _files_of(data_dir: Path, namespace: str) -> list[str]:
    """Files under the data directory that belong to a tenant's host namespace: logs,
    pod directories (by path) and CDI specs (by the namespace they record)."""
    found = [  # os.walk skips what the platform removes while it walks
        directory for directory, _, _ in os.walk(data_dir) if namespace in Path(directory).parts
    ]
    for spec in (data_dir / "cdi").glob("*.json"):
        with contextlib.suppress(FileNotFoundError):
            if json.loads(spec.read_text()).get("namespace") == namespace:
                found.append(str(spec))
    return found


def _run_workload(tenancy: Tenancy) -> None:
    tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
    tenancy.wait(
        lambda: tenancy.as_tenant("legal-ai", "logs", POD, check=False).stdout.strip(),
        "the pod's log",
        timeout=30,
    )


def test_a_recreated_tenant_starts_empty(tmp_path: Path) -> None:
    with seed_platform(tmp_path, runtime="process") as tenancy:
        _run_workload(tenancy)
        assert _files_of(tenancy.data_dir, "tenant-legal-ai")  # logs, /pod, CDI spec
        assert allot(["tenant", "delete", "legal-ai", "--data-dir", str(tenancy.data_dir)]) == 0
        tenancy.wait(
            lambda: not _files_of(tenancy.data_dir, "tenant-legal-ai"), "files removed", 10
        )
        tenancy.create_tenant("legal-ai")
        listing = tenancy.tenant_json("legal-ai", "pods,resourceclaims,configmaps", "-A")
        assert [i["metadata"]["name"] for i in listing["items"]] == []
        logs = tenancy.as_tenant("legal-ai", "logs", POD, check=False)
        assert logs.returncode != 0
        assert f'pods "{POD}" not found' in logs.stderr
        assert _files_of(tenancy.data_dir, "tenant-legal-ai") == []
        assert tenancy.host_objects("tenant-legal-ai") == []


def test_a_recreated_tenant_sees_the_trimmed_slices(tmp_path: Path) -> None:
    values = str(SEEDS / "000-research-ai-vcluster-config.yaml")
    with seed_platform(tmp_path) as tenancy:

        def slices() -> list[str]:
            listing = tenancy.tenant_json("tmpt", "resourceslices")
            return sorted(i["metadata"]["name"] for i in listing["items"])

        tenancy.create_tenant("tmpt", "-f", values)
        first = tenancy.wait(slices, "the first tenant's slices")
        assert allot(["tenant", "delete", "tmpt", "--data-dir", str(tenancy.data_dir)]) == 0
        tenancy.create_tenant("tmpt", "-f", values)
        assert tenancy.wait(slices, "the re-created tenant's slices", timeout=10) == first


def test_admission_audit_forgets_a_removed_cluster(tmp_path: Path) -> None:
    api = Registry(tmp_path)
    api.add_cluster("gone")
    for cluster in ("host", "gone", "host"):
        api.admission_audit.record({"cluster": cluster, "policy": "p"})
    assert api.admission_audit.path("gone").exists()
    api.remove_cluster("gone")
    assert not api.admission_audit.path("gone").exists()
    lines = api.admission_audit.path("host").read_text().splitlines()
    assert [json.loads(line)["cluster"] for line in lines] == ["host", "host"]


def test_admission_audit_is_capped(tmp_path: Path) -> None:
    api = Registry(tmp_path)
    api.admission_audit.bound("tenant", 1000)
    for number in range(80):  # about 6 kB of records, within the rate's burst
        api.admission_audit.record({"cluster": "tenant", "policy": "p", "n": number})
    files = sorted(api.admission_audit.directory.glob("tenant.jsonl*"))
    assert [f.name for f in files] == ["tenant.jsonl", "tenant.jsonl.1"]
    assert sum(f.stat().st_size for f in files) <= 2 * 1000
    assert api.admission_audit.size("tenant") == sum(f.stat().st_size for f in files)
    last = json.loads(files[0].read_text().splitlines()[-1])
    assert last["n"] == 79
