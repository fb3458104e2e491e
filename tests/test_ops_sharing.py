"""Fair sharing as the operations side shows it: the capacity document's rows, ``allot
top``'s tables, the dashboard panel and ``/metrics``, from one engine pass."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from allot.api.tenancy import TenantSharing
from allot.cli.ops import _top_view
from allot.fairshare.cycle import admission_cycle
from allot.fairshare.model import Workload, queue_from_sharing
from allot.fairshare.report import SharingSummary, summary
from allot.ops import views
from allot.ops.capacity import PoolInfo, SliceSummary, Snapshot
from allot.ops.dashboard import _sharing
from allot.ops.metrics import MetricSources, PlatformMetrics

GIB = 1 << 30
SHARING = {
    "research": {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "1"}]},
    "legal": {
        "cohort": "pool",
        "deviceClasses": [{"name": "a100", "guaranteed": "2"}],
        "gpuMemory": {"guaranteed": "80Gi"},
    },
}


def _summary() -> SharingSummary:
    queues = {
        name: queue_from_sharing(name, TenantSharing.model_validate(spec))
        for name, spec in SHARING.items()
    }
    running = Workload("r1", "research", {"a100": 2}, admitted_at=0.0)
    waiting = Workload("r2", "research", {"a100": 2}, created=1.0)
    memory = Workload("l1", "legal", {"gpuMemory": 40 * GIB}, admitted_at=0.0)
    decision = admission_cycle(queues, [running, waiting, memory])
    assert decision.books is not None
    return summary(decision.books, [running, waiting, memory], {"research": 3})


def test_the_capacity_document_rows() -> None:
    document = views.sharing(_summary())
    rows = {(r["tenant"], r["resource"]): r for r in document["tenants"]}
    assert rows[("research", "a100")] == {
        "tenant": "research", "cohort": "pool", "resource": "a100", "guaranteed": "1",
        "used": "2", "borrowed": "1", "lent": "0", "admitted": 1, "waiting": 1, "preempted": 3,
    }  # fmt: skip
    assert rows[("legal", "a100")]["lent"] == "1"
    assert rows[("legal", "gpuMemory")]["used"] == "40Gi"
    assert document["cohorts"] == [
        {"cohort": "pool", "resource": "a100", "idle": "1"},
        {"cohort": "pool", "resource": "gpuMemory", "idle": "40Gi"},
    ]


def test_top_and_the_dashboard_show_the_same_rows() -> None:
    sharing = views.sharing(_summary())
    document = {"time": "now", "pools": [], "tenants": [], "alerts": [], "sharing": sharing}
    console = Console(width=160, record=True)
    console.print(_top_view(document))
    text = console.export_text()
    assert "Fair sharing" in text
    assert any(
        line.replace("│", " ").split()
        == ["research", "pool", "a100", "1", "2", "1", "0", "1", "1", "3"]
        for line in text.splitlines()
        if "research" in line
    )
    memory_row = next(line for line in text.splitlines() if "gpuMemory" in line and "80Gi" in line)
    assert memory_row.replace("│", " ").split() == ["gpuMemory", "80Gi", "40Gi", "0", "0"]
    panel = _sharing(document)
    assert "<td>research</td><td>pool</td><td>a100</td><td>1</td><td>2</td><td>1</td>" in panel
    assert "<td>gpuMemory</td><td>40Gi</td>" in panel
    empty = {**document, "sharing": views.sharing(SharingSummary())}
    assert "No tenant uses fair sharing." in _sharing(empty)
    console = Console(width=160, record=True)
    console.print(_top_view(empty))
    assert "Fair sharing" not in console.export_text()


def test_metrics_carry_devices_and_bytes_in_separate_families() -> None:
    now = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
    snapshot = Snapshot(
        now, {}, {}, {}, {}, [], [PoolInfo("gpu.nvidia.com", "p1", 1, 1, 1, "n1")], [],
        [SliceSummary([], {}, Counter())],
    )  # fmt: skip
    metrics = PlatformMetrics(MetricSources(lambda: snapshot, list, list, dict, _summary))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
    }
    research = (("class", "a100"), ("cohort", "pool"), ("tenant", "research"))
    assert samples[("allot_share_borrowed_devices", research)] == 1
    assert samples[("allot_share_guaranteed_devices", research)] == 1
    legal = (("cohort", "pool"), ("tenant", "legal"))
    assert samples[("allot_share_used_gpu_memory_bytes", legal)] == 40 * GIB
    assert samples[("allot_share_preemptions_total", (("tenant", "research"),))] == 3
    assert samples[("allot_share_workloads", (("state", "waiting"), ("tenant", "research")))] == 1
    assert samples[("allot_cohort_idle_devices", (("class", "a100"), ("cohort", "pool")))] == 1
