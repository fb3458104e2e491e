"""Required inter-pod affinity and anti-affinity: kube-scheduler's InterPodAffinity filter.

A pod's ``podAffinity`` and ``podAntiAffinity`` ``requiredDuringSchedulingIgnoredDuringExecution``
terms (``labelSelector``, ``namespaces``, ``namespaceSelector``, ``topologyKey``) and the
required anti-affinity terms of the pods already on nodes, judged as upstream's plugin judges
them (``pkg/scheduler/framework/plugins/interpodaffinity``, Kubernetes 1.36):

- *PreFilter* counts, per topology pair (a node label's key and value): the assigned pods
  that match every affinity term of the incoming pod, those that match one of its
  anti-affinity terms, and the assigned pods whose own anti-affinity terms match the
  incoming pod. Assigned pods are the pods with a node that have not succeeded or failed
  (the scheduler's informer leaves those out).
- *Filter*, per node, in upstream's order and words: every affinity term's topology key
  must be a label of the node and its pair must hold a matching pod
  (``node(s) didn't match pod affinity rules``), except for the first pod of a group that
  matches its own terms when no pod anywhere matches them; no anti-affinity term's pair may
  hold a matching pod (``node(s) didn't match pod anti-affinity rules``); no existing pod's
  anti-affinity may cover one of the node's label pairs
  (``node(s) didn't satisfy existing pods anti-affinity rules``).

A term with no ``namespaces`` and no ``namespaceSelector`` is about the pod's own
namespace; a nil ``labelSelector`` or ``namespaceSelector`` selects nothing, ``{}``
everything. Preferred terms only score nodes upstream; allot's placement policy orders
them instead (the conformance ledger says so). Called by :mod:`allot.controllers.scheduler`
for each pod it places; pure apart from the lookups it is given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from allot.api import core_v1 as corev1
from allot.api.meta import selector_matches
from allot.types import Obj

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
TERMINAL = ("Succeeded", "Failed")

NamespaceLabels = Callable[[str], Mapping[str, str]]
"""namespace -> its labels (for ``namespaceSelector``)."""
Pair = tuple[str, str]


@dataclass(frozen=True)
class Term:
    """One required pod (anti-)affinity term of a pod, its namespaces resolved."""

    selector: Obj | None
    namespaces: frozenset[str]
    namespace_selector: Obj | None
    topology_key: str

    def matches(self, pod: Obj, namespace_labels: NamespaceLabels) -> bool:
        """Upstream's ``AffinityTerm.Matches``: the pod's namespace is one of the term's
        (or its namespace's labels are selected), and its labels are selected."""
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        in_namespace = namespace in self.namespaces or (
            self.namespace_selector is not None
            and selector_matches(self.namespace_selector, dict(namespace_labels(namespace)))
        )
        return in_namespace and selector_matches(self.selector, metadata.get("labels") or {})


def required_terms(pod: Obj, kind: str) -> list[Term]:
    """The pod's required terms of ``kind`` (``podAffinity`` or ``podAntiAffinity``)."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    terms = (affinity.get(kind) or {}).get(REQUIRED) or []
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    return [_term(raw, namespace) for raw in terms if isinstance(raw, dict)]


def _term(raw: Obj, namespace: str) -> Term:
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or [])
    namespace_selector = raw.get("namespaceSelector")
    if not namespaces and namespace_selector is None:
        namespaces = frozenset({namespace})
    return Term(
        raw.get("labelSelector"), namespaces, namespace_selector, str(raw.get("topologyKey", ""))
    )


def has_required_anti_affinity(pod: Obj) -> bool:
    return bool(required_terms(pod, "podAntiAffinity"))


def assigned(pod: Obj) -> bool:
    """Whether the scheduler counts the pod as on its node."""
    return (
        bool((pod.get("spec") or {}).get("nodeName"))
        and (pod.get("status") or {}).get("phase") not in TERMINAL
    )


@dataclass
class AffinityState:
    """Upstream's preFilterState: the incoming pod's terms and the three counts."""

    pod: Obj
    affinity: list[Term]
    anti_affinity: list[Term]
    affinity_counts: Counter[Pair]
    anti_affinity_counts: Counter[Pair]
    existing_anti_affinity_counts: Counter[Pair]

    def problem(self, node: corev1.Node, namespace_labels: NamespaceLabels) -> str | None:
        """Filter: the node's reason, in upstream's order, or None when it passes."""
        labels = node.metadata.labels or {}
        if not self._satisfies_affinity(labels, namespace_labels):
            return AFFINITY_MISMATCH
        if any(
            term.topology_key in labels
            and self.anti_affinity_counts[(term.topology_key, labels[term.topology_key])] > 0
            for term in self.anti_affinity
        ):
            return ANTI_AFFINITY_MISMATCH
        if any(self.existing_anti_affinity_counts[pair] > 0 for pair in labels.items()):
            return EXISTING_ANTI_AFFINITY_MISMATCH
        return None

    def _satisfies_affinity(
        self, labels: Mapping[str, str], namespace_labels: NamespaceLabels
    ) -> bool:
        pods_exist = True
        for term in self.affinity:
            if term.topology_key not in labels:
                return False  # every topology key must be a label of the node
            if self.affinity_counts[(term.topology_key, labels[term.topology_key])] <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # the first pod of a group with affinity to itself may go anywhere the keys are
        return not self.affinity_counts and all(
            term.matches(self.pod, namespace_labels) for term in self.affinity
        )


def prefilter(
    pod: Obj,
    existing: Iterable[Obj],
    node_labels: Callable[[str], Mapping[str, str] | None],
    namespace_labels: NamespaceLabels,
) -> AffinityState | None:
    """The counts for ``pod`` over the ``existing`` assigned pods (``node_labels``: a
    node's labels by name, None for a node that is gone); None when the pod has no
    required terms and no existing pod has required anti-affinity (upstream's Skip)."""
    state = AffinityState(
        pod,
        required_terms(pod, "podAffinity"),
        required_terms(pod, "podAntiAffinity"),
        Counter(),
        Counter(),
        Counter(),
    )
    for other in existing:
        labels = node_labels(str((other.get("spec") or {}).get("nodeName")))
        if labels is None:
            continue
        for term in required_terms(other, "podAntiAffinity"):
            if term.topology_key in labels and term.matches(pod, namespace_labels):
                state.existing_anti_affinity_counts[_pair(term, labels)] += 1
        _count_incoming(state, other, labels, namespace_labels)
    if not (state.affinity or state.anti_affinity or state.existing_anti_affinity_counts):
        return None
    return state


def _count_incoming(
    state: AffinityState,
    other: Obj,
    labels: Mapping[str, str],
    namespace_labels: NamespaceLabels,
) -> None:
    """The incoming pod's terms against one existing pod (upstream's
    ``getIncomingAffinityAntiAffinityCounts``)."""
    if state.affinity and all(t.matches(other, namespace_labels) for t in state.affinity):
        for term in state.affinity:
            if term.topology_key in labels:
                state.affinity_counts[_pair(term, labels)] += 1
    for term in state.anti_affinity:
        if term.topology_key in labels and term.matches(other, namespace_labels):
            state.anti_affinity_counts[_pair(term, labels)] += 1


def _pair(term: Term, labels: Mapping[str, str]) -> Pair:
    return term.topology_key, labels[term.topology_key]
