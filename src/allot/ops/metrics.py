"""``/metrics``: the platform's capacity, claims, quotas and alerts in Prometheus format.

Rendered from a capacity snapshot taken at scrape time (its families written by
:func:`exposition`, the same text ``prometheus-client`` writes, faster; the device, counter
and pool families written again only when the snapshot's version says that the slices,
classes or claims changed), plus what the
controllers feed through ``prometheus-client``: the allocator's time per node attempt,
each controller's reconcile time (``controller="tenant-sync"`` is the sync), and counters
of device allocations and releases (from the audit recorder). Prometheus' naming rules
hold: base units in names, ``_total`` only on counters, no ``_created`` series, and each
physical device counted once in ``allot_devices*`` so that ``sum()`` gives devices, with
the per-class view as series of their own. Claims of host namespaces carry
``tenant="host"`` (a reserved tenant name).

* ``allot_devices``, ``allot_devices_allocated``, ``allot_devices_free`` (unallocated and
  allocatable now on its own: its shared counters still fit) and ``allot_devices_unavailable``
  (unallocated but not allocatable now) ``{node,pool,driver}``: total = allocated + free +
  unavailable;
* ``allot_class_devices``, ``allot_class_devices_allocated``, ``allot_class_devices_free``,
  ``allot_class_devices_unavailable`` and ``allot_class_devices_allocatable`` (how many more
  could be allocated one after the other: free devices of a partitionable GPU may exclude
  each other) ``{node,pool,driver,class}`` (a device counts in every class that selects it);
* ``allot_partition_profile_devices`` and ``allot_partition_profile_devices_allocatable``
  ``{node,pool,driver,profile}`` (MIG devices, or DynamicMIG placements, per profile);
* ``allot_counter_capacity`` and ``allot_counter_used`` ``{driver,pool,counter}`` (MIG
  memory slices, multiprocessors, ... summed over the pool's GPUs);
* ``allot_tenant_gpu_memory_allocated_bytes{tenant}``;
* ``allot_claims{tenant,class,state}`` (pending or allocated) and
  ``allot_oldest_pending_claim_age_seconds{tenant}``;
* ``allot_device_allocations_total`` and ``allot_device_releases_total`` ``{tenant,class}``;
* ``allot_quota_used_ratio{tenant,namespace,quota,resource}``;
* ``allot_pool_slices`` and ``allot_pool_slices_expected{driver,pool}``;
* ``allot_tenant_sync_errors{tenant}`` and ``allot_alert{rule,severity,tenant,subject}``;
* fair sharing, per tenant: ``allot_share_{guaranteed,used,borrowed,lent}_devices``
  ``{tenant,cohort,class}`` and ``allot_share_{guaranteed,used,borrowed,lent}_gpu_memory_bytes``
  ``{tenant,cohort}``, ``allot_share_workloads{tenant,state}`` (admitted or waiting),
  ``allot_share_preemptions_total{tenant}`` (its workloads evicted), and per cohort
  ``allot_cohort_idle_devices{cohort,class}`` and ``allot_cohort_idle_gpu_memory_bytes``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import (
    Counter as CounterMetric,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from allot.api.quantity import Quantity
from allot.fairshare.model import GPU_MEMORY
from allot.fairshare.report import SharingSummary
from allot.ops.audit import HOST_TENANT, Entry
from allot.ops.capacity import NO_CLASS, Snapshot
from allot.ops.rules import Firing
from allot.types import Obj

# No *_created series beside counters and histograms (process-wide in prometheus_client).
disable_created_metrics()  # type: ignore[no-untyped-call]
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass(frozen=True)
class MetricSources:
    """Where a scrape reads the platform's state."""

    snapshot: Callable[[], Snapshot]
    quotas: Callable[[], list[Obj]]
    alerts: Callable[[], list[Firing]]
    sync_errors: Callable[[], Mapping[tuple[str, str, str, str], str]]
    sharing: Callable[[], SharingSummary] = SharingSummary
    pending_since: Callable[[], Mapping[tuple[str, str], dt.datetime]] = dict
    """Since when each claim that held devices before and was released has been pending
    (namespace, name): the alert manager's, so the PrometheusRule measures what the
    embedded ``ClaimPendingTooLong`` measures."""


class PlatformMetrics:
    """The registry behind ``/metrics``; ``render()`` scrapes."""

    def __init__(self, sources: MetricSources) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.allocator_seconds = Histogram(
            "allot_allocator_duration_seconds",
            "Time the allocator took for one node attempt of one pod's claims.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.reconcile_seconds = Histogram(
            "allot_controller_reconcile_duration_seconds",
            "Time one reconcile took, per controller (tenant-sync is the sync).",
            ["controller"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._reconcile_series: dict[str, Histogram] = {}
        self.allocations = CounterMetric(
            "allot_device_allocations",
            "Devices allocated to claims, per tenant and device class.",
            ["tenant", "class"],
            registry=self.registry,
        )
        self.releases = CounterMetric(
            "allot_device_releases",
            "Devices released by claims, per tenant and device class.",
            ["tenant", "class"],
            registry=self.registry,
        )
        self.collector = _Collector(sources)  # rendered by ``exposition`` (see render)

    def count(self, entries: list[Entry]) -> None:
        """Audit entries as they are written: one allocation or release each."""
        for entry in entries:
            counter = self.allocations if entry.action == "allocate" else self.releases
            counter.labels(entry.tenant or HOST_TENANT, entry.device_class).inc()

    def observe_reconcile(self, controller: str, seconds: float) -> None:
        series = self._reconcile_series.get(controller)
        if series is None:  # one lookup per controller, not one per reconcile
            series = self._reconcile_series[controller] = self.reconcile_seconds.labels(
                controller=controller
            )
        series.observe(seconds)

    def render(self) -> bytes:
        """The scrape: the histograms and counters above through ``prometheus-client``,
        then the snapshot's families (tens of thousands of samples on a large fleet)
        through :func:`exposition`, the same text written without the library's
        per-sample name checks (half the time of a 1,000-node scrape)."""
        return generate_latest(self.registry) + self.collector.render()


class _Collector:
    """The snapshot's families, written at each scrape."""

    def __init__(self, sources: MetricSources) -> None:
        self.sources = sources
        self._rows = _RowText(())
        # the text of the families that depend on the snapshot alone, and its version
        self._fleet_text: tuple[tuple[object, ...], str, str] | None = None

    def render(self) -> bytes:
        """The families of the snapshot and the other sources, in a fixed order. The
        device, counter and pool families (tens of thousands of samples on a large fleet)
        are written again only when the snapshot's version changes, so an idle fleet's
        scrape reuses their text; their samples' names and labels are kept while the
        fleet's slices and classes stay the same, so a changed claim costs their values."""
        snapshot = self.sources.snapshot()
        known = self._fleet_text
        if known is None or not snapshot.version or known[0] != snapshot.version:
            if not snapshot.version or self._rows.version != snapshot.version[:1]:
                self._rows = _RowText(snapshot.version[:1])
            known = self._fleet_text = (
                snapshot.version,
                self._rows.devices(snapshot) + self._rows.counters(snapshot),
                _text(_pools(snapshot)),
            )
        live = _text(_claims(snapshot, self.sources.pending_since()))
        live += _text(_quotas(self.sources.quotas()))
        others = _text(_problems(self.sources.alerts(), self.sources.sync_errors()))
        others += _text(_sharing(self.sources.sharing()))
        return (known[1] + live + known[2] + others).encode("utf-8")


@dataclass(frozen=True)
class _RowGauge:
    """A gauge with a sample per row of the fleet (a row: its label values, in order)."""

    name: str
    documentation: str
    labels: tuple[str, ...]

    def head(self, row: tuple[str, ...]) -> str:
        """The row's sample up to its value: the name and the labels in name order."""
        pairs = sorted(zip(self.labels, row, strict=True))
        labels = ",".join(f'{key}="{_escape_value(value)}"' for key, value in pairs)
        return f"{self.name}{{{labels}}} "


_PHYSICAL_LABELS = ("node", "pool", "driver")
_CLASS_LABELS = ("node", "pool", "driver", "class")
_PROFILE_LABELS = ("node", "pool", "driver", "profile")
_PHYSICAL = [
    ("total", _RowGauge("allot_devices", "Devices published per node, pool and driver, each "
                        "counted once.", _PHYSICAL_LABELS)),
    ("allocated", _RowGauge("allot_devices_allocated", "Devices allocated to claims.",
                            _PHYSICAL_LABELS)),
    ("free", _RowGauge("allot_devices_free", "Unallocated devices that could each be "
                       "allocated now (their shared counters still fit; free devices may "
                       "exclude each other).", _PHYSICAL_LABELS)),
    ("unavailable", _RowGauge("allot_devices_unavailable", "Unallocated devices that cannot "
                              "be allocated now (shared counters used up by allocated "
                              "devices, or the pool is incomplete).", _PHYSICAL_LABELS)),
]  # fmt: skip
_PER_CLASS = [
    ("total", _RowGauge("allot_class_devices", "Devices a device class selects (a device "
                        "counts in every class that selects it).", _CLASS_LABELS)),
    ("allocated", _RowGauge("allot_class_devices_allocated", "Devices of the class "
                            "allocated to claims.", _CLASS_LABELS)),
    ("free", _RowGauge("allot_class_devices_free", "Unallocated devices of the class that "
                       "could each be allocated now.", _CLASS_LABELS)),
    ("unavailable", _RowGauge("allot_class_devices_unavailable", "Unallocated devices of the "
                              "class that cannot be allocated now.", _CLASS_LABELS)),
    ("allocatable", _RowGauge("allot_class_devices_allocatable", "How many more devices of "
                              "the class could be allocated now, one after the other "
                              "(smallest first).", _CLASS_LABELS)),
]  # fmt: skip
_PER_PROFILE = [
    ("total", _RowGauge("allot_partition_profile_devices", "GPU partitions (or possible "
                        "placements of partitionable devices) published per profile.",
                        _PROFILE_LABELS)),
    ("allocatable", _RowGauge("allot_partition_profile_devices_allocatable", "How many more "
                              "GPU partitions of the profile could be allocated now, one "
                              "after the other.", _PROFILE_LABELS)),
]  # fmt: skip
_COUNTER_LABELS = ("driver", "pool", "counter")
_COUNTER_CAPACITY = _RowGauge(
    "allot_counter_capacity", "Shared counters published per pool.", _COUNTER_LABELS
)
_COUNTER_USED = _RowGauge(
    "allot_counter_used", "Shared counters consumed by allocated devices.", _COUNTER_LABELS
)


class _RowText:
    """The text of the families with a sample per row of the fleet, for one version of
    the fleet (its slices and classes): what does not depend on the claims (each sample's
    name and labels, the counters published per pool) is made once per version."""

    def __init__(self, version: tuple[object, ...]) -> None:
        self.version = version
        self._heads: dict[tuple[str, tuple[str, ...]], str] = {}
        self._numbers: dict[float, str] = {}
        self._counter_totals: list[tuple[tuple[str, str, str], int]] | None = None

    def devices(self, snapshot: Snapshot) -> str:
        out: list[str] = []
        physical = sorted(snapshot.physical_rows().items())
        for state, gauge in _PHYSICAL:
            self._write(out, gauge, ((key, counts[state]) for key, counts in physical))
        per_class = sorted(r for r in snapshot.device_rows().items() if r[0][3] != NO_CLASS)
        for state, gauge in _PER_CLASS:
            self._write(out, gauge, ((key, counts[state]) for key, counts in per_class))
        available = snapshot.availability()
        profiles = sorted(available.profile_total)
        totals = (available.profile_total, available.profile_allocatable)
        for (_, gauge), counts in zip(_PER_PROFILE, totals, strict=True):
            self._write(out, gauge, ((key, counts[key]) for key in profiles))
        out.append(_text([_tenant_memory(snapshot)]))
        return "".join(out)

    def counters(self, snapshot: Snapshot) -> str:
        """Per pool and counter, summed over the pool's counter sets (one per GPU); the
        ``memory-slice-<N>`` counters are summed as ``memory-slices``."""
        if self._counter_totals is None or not self.version:
            totals: Counter[tuple[str, str, str]] = Counter()
            for (driver, pool, _, counter), value in snapshot.counters_total.items():
                totals[(driver, pool, _fold(counter))] += value
            self._counter_totals = sorted(totals.items())
        consumed: Counter[tuple[str, str, str]] = Counter()
        for (driver, pool, _, counter), value in snapshot.counters_used.items():
            consumed[(driver, pool, _fold(counter))] += value
        out: list[str] = []
        self._write(out, _COUNTER_CAPACITY, self._counter_totals)
        self._write(out, _COUNTER_USED, ((k, consumed.get(k, 0)) for k, _ in self._counter_totals))
        return "".join(out)

    def _write(
        self,
        out: list[str],
        gauge: _RowGauge,
        samples: Iterable[tuple[tuple[str, ...], float]],
    ) -> None:
        out.append(_header(gauge.name, gauge.documentation, "gauge"))
        heads, numbers = self._heads, self._numbers
        for row, value in samples:
            head = heads.get((gauge.name, row))
            if head is None:
                head = heads[(gauge.name, row)] = gauge.head(row)
            number = numbers.get(value)
            if number is None:
                number = numbers[value] = floatToGoString(value)  # type: ignore[no-untyped-call]
            out.append(f"{head}{number}\n")


_LEGACY_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LEGACY_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def exposition(families: Iterable[Metric]) -> bytes:
    """Prometheus' text format for gauge and counter families, byte for byte what
    ``generate_latest`` writes for them (a counter's name gets ``_total``, labels in name
    order, values escaped, numbers as Go prints them); a family of another type, or with
    a name outside the legacy character set, goes through ``generate_latest`` itself."""
    return _text(families).encode("utf-8")


def _text(families: Iterable[Metric]) -> str:
    out: list[str] = []
    for family in families:
        if family.type not in ("gauge", "counter") or not _plain_names(family):
            out.append(generate_latest(_Single(family)).decode("utf-8"))
            continue
        name = f"{family.name}_total" if family.type == "counter" else family.name
        out.append(_header(name, family.documentation, family.type))
        for sample in family.samples:
            labels = ",".join(
                f'{key}="{_escape_value(value)}"' for key, value in sorted(sample.labels.items())
            )
            body = f"{sample.name}{{{labels}}}" if labels else sample.name
            out.append(f"{body} {floatToGoString(sample.value)}\n")  # type: ignore[no-untyped-call]
    return "".join(out)


def _header(name: str, documentation: str, kind: str) -> str:
    help_text = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


def _plain_names(family: Metric) -> bool:
    """No timestamps, and names and label names the text format takes as they are."""
    names = {family.name} | {sample.name for sample in family.samples}
    keys = {key for sample in family.samples for key in sample.labels}
    return (
        all(sample.timestamp is None for sample in family.samples)
        and all(_LEGACY_NAME.match(name) for name in names)
        and all(_LEGACY_LABEL.match(key) for key in keys)
    )


def _escape_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class _Single(Collector):
    """One family as a collector, for ``generate_latest``."""

    def __init__(self, family: Metric) -> None:
        self.family = family

    def collect(self) -> Iterator[Metric]:
        yield self.family


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def _tenant_memory(snapshot: Snapshot) -> Metric:
    memory = _gauge(
        "allot_tenant_gpu_memory_allocated_bytes", "GPU memory of allocated devices.", ["tenant"]
    )
    for tenant, held in sorted(snapshot.tenant_memory().items()):
        memory.add_metric([tenant or HOST_TENANT], held)
    return memory


def _fold(counter: str) -> str:
    return "memory-slices" if counter.startswith("memory-slice-") else counter


def _claims(
    snapshot: Snapshot, released: Mapping[tuple[str, str], dt.datetime]
) -> Iterator[Metric]:
    claims = _gauge(
        "allot_claims", "Claims per tenant, class and state.", ["tenant", "class", "state"]
    )
    counts: Counter[tuple[str, str, str]] = Counter()
    oldest: dict[str, float] = {}
    for claim in snapshot.claims:
        state = "allocated" if claim.allocated else "pending"
        tenant = claim.tenant or HOST_TENANT
        for device_class in claim.classes or ("",):
            counts[(tenant, device_class, state)] += 1
        since = released.get((claim.namespace, claim.name), claim.created)
        if not claim.allocated and since is not None:
            waited = (snapshot.now - since).total_seconds()
            oldest[tenant] = max(oldest.get(tenant, 0.0), waited)
    for key, count in sorted(counts.items()):
        claims.add_metric(list(key), count)
    yield claims
    age = _gauge(
        "allot_oldest_pending_claim_age_seconds",
        "How long the longest-waiting unallocated claim has waited (since its creation, or "
        "since its release if it held devices before).",
        ["tenant"],
    )
    for tenant, seconds in sorted(oldest.items()):
        age.add_metric([tenant], seconds)
    yield age


def _quotas(quotas: list[Obj]) -> Iterator[Metric]:
    ratio = _gauge(
        "allot_quota_used_ratio",
        "used / hard per ResourceQuota key.",
        ["tenant", "namespace", "quota", "resource"],
    )
    for quota in quotas:
        status = quota.get("status") or {}
        tenant = (quota["metadata"].get("labels") or {}).get("allot.dev/tenant", "")
        for key, hard in sorted((status.get("hard") or {}).items()):
            limit = Quantity.parse(str(hard)).nanos
            used = Quantity.parse(str((status.get("used") or {}).get(key, "0"))).nanos
            labels = [
                tenant,
                quota["metadata"].get("namespace", ""),
                quota["metadata"]["name"],
                key,
            ]
            ratio.add_metric(labels, used / limit if limit else 0.0)
    yield ratio


def _pools(snapshot: Snapshot) -> Iterator[Metric]:
    slices = _gauge(
        "allot_pool_slices", "Slices published in the pool's newest generation.", ["driver", "pool"]
    )
    expected = _gauge(
        "allot_pool_slices_expected", "The pool's resourceSliceCount.", ["driver", "pool"]
    )
    for pool in snapshot.pools:
        slices.add_metric([pool.driver, pool.pool], pool.slices)
        expected.add_metric([pool.driver, pool.pool], pool.expected)
    yield slices
    yield expected


def _problems(
    alerts: list[Firing], sync_errors: Mapping[tuple[str, str, str, str], str]
) -> Iterator[Metric]:
    errors = _gauge(
        "allot_tenant_sync_errors", "Tenant objects not synced to the host.", ["tenant"]
    )
    for tenant, count in sorted(Counter(key[0] for key in sync_errors).items()):
        errors.add_metric([tenant], count)
    yield errors
    firing = _gauge(
        "allot_alert",
        "Firing alerts (1 while the condition holds).",
        ["rule", "severity", "tenant", "subject"],
    )
    for alert in alerts:
        subject = "/".join(
            p for p in (alert.subject_kind, alert.subject_namespace, alert.subject_name) if p
        )
        firing.add_metric([alert.rule, alert.severity, alert.tenant, subject], 1)
    yield firing


_STANDING = ("guaranteed", "used", "borrowed", "lent")


def _sharing(summary: SharingSummary) -> Iterator[Metric]:
    devices = {
        part: _gauge(
            f"allot_share_{part}_devices",
            f"Devices of a class a fair-sharing tenant has {part}.",
            ["tenant", "cohort", "class"],
        )
        for part in _STANDING
    }
    memory = {
        part: _gauge(
            f"allot_share_{part}_gpu_memory_bytes",
            f"GPU memory a fair-sharing tenant has {part}.",
            ["tenant", "cohort"],
        )
        for part in _STANDING
    }
    workloads = _gauge(
        "allot_share_workloads", "Workloads per tenant and state.", ["tenant", "state"]
    )
    preempted = CounterMetricFamily(
        "allot_share_preemptions", "Workloads of the tenant evicted by allot.", labels=["tenant"]
    )
    for tenant, report in sorted(summary.tenants.items()):
        cohort = report.cohort or ""
        for resource, standing in report.resources.items():
            for part in _STANDING:
                value = getattr(standing, part)
                if resource == GPU_MEMORY:
                    memory[part].add_metric([tenant, cohort], value)
                else:
                    devices[part].add_metric([tenant, cohort, resource], value)
        workloads.add_metric([tenant, "admitted"], report.admitted)
        workloads.add_metric([tenant, "waiting"], report.waiting)
        preempted.add_metric([tenant], summary.preempted.get(tenant, 0))
    yield from devices.values()
    yield from memory.values()
    yield workloads
    yield preempted
    yield from _idle(summary)


def _idle(summary: SharingSummary) -> Iterator[Metric]:
    devices = _gauge(
        "allot_cohort_idle_devices",
        "Devices a cohort's members are guaranteed and nobody uses.",
        ["cohort", "class"],
    )
    memory = _gauge(
        "allot_cohort_idle_gpu_memory_bytes",
        "GPU memory a cohort's members are guaranteed and nobody uses.",
        ["cohort"],
    )
    for cohort, idle in sorted(summary.cohorts.items()):
        for resource, value in idle.items():
            if resource == GPU_MEMORY:
                memory.add_metric([cohort], value)
            else:
                devices.add_metric([cohort, resource], value)
    yield devices
    yield memory
