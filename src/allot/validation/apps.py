"""``apps/v1`` defaulting and validation: Deployment, ReplicaSet, StatefulSet, DaemonSet,
ControllerRevision, and core/v1's ReplicationController (a ReplicaSet with a plain label map
for a selector), as upstream's ``SetDefaults_*`` (pkg/apis/apps/v1) and
pkg/apis/apps/validation, with their texts and field paths. Called through the kinds'
strategy modules in :mod:`allot.registry.kinds`."""

from __future__ import annotations

from allot.api import apps_v1 as apps
from allot.api import core_v1 as corev1
from allot.api.meta import LabelSelector
from allot.validation import meta as metavalidation
from allot.validation.field import ErrorList, Path, forbidden, invalid, not_supported, required
from allot.validation.workloads import (
    default_pod_template,
    immutable,
    int_or_percent,
    nonnegative,
    not_over_100_percent,
    selector_mismatch,
    template_labels,
    validate_always_restart,
    validate_int_or_percent,
    validate_label_selector,
    validate_selector,
    validate_template,
    validate_template_metadata,
    validate_template_spec,
)

SPEC = Path("spec")
DEPLOYMENT_STRATEGIES = ["Recreate", "RollingUpdate"]
DAEMON_SET_STRATEGIES = ["RollingUpdate", "OnDelete"]
POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
RETENTION_POLICIES = ["Retain", "Delete"]
STATEFUL_SET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


# ------------------------------------------------------------------------ defaulting
def default_deployment(obj: apps.Deployment) -> None:
    """``SetDefaults_Deployment``: one replica, RollingUpdate 25%/25%, ten revisions kept,
    a 600-second progress deadline."""
    spec = obj.spec
    if spec.replicas is None:
        spec.replicas = 1
    strategy = spec.strategy = spec.strategy or apps.DeploymentStrategy()
    if strategy.type is None:
        strategy.type = "RollingUpdate"
    if strategy.type == "RollingUpdate":
        rolling = strategy.rolling_update = (
            strategy.rolling_update or apps.RollingUpdateDeployment()
        )
        if rolling.max_unavailable is None:
            rolling.max_unavailable = "25%"
        if rolling.max_surge is None:
            rolling.max_surge = "25%"
    if spec.revision_history_limit is None:
        spec.revision_history_limit = 10
    if spec.progress_deadline_seconds is None:
        spec.progress_deadline_seconds = 600
    default_pod_template(spec.template)


def default_replica_set(obj: apps.ReplicaSet) -> None:
    """``SetDefaults_ReplicaSet``: one replica."""
    if obj.spec.replicas is None:
        obj.spec.replicas = 1
    default_pod_template(obj.spec.template)


def default_stateful_set(obj: apps.StatefulSet) -> None:
    """``SetDefaults_StatefulSet``: one replica, OrderedReady, RollingUpdate from partition
    0, ten revisions kept, claims retained on deletion and scale-down."""
    spec = obj.spec
    if spec.replicas is None:
        spec.replicas = 1
    if spec.pod_management_policy is None:
        spec.pod_management_policy = "OrderedReady"
    strategy = spec.update_strategy = spec.update_strategy or apps.StatefulSetUpdateStrategy()
    if strategy.type is None:
        strategy.type = "RollingUpdate"
    if strategy.type == "RollingUpdate":
        rolling = strategy.rolling_update or apps.RollingUpdateStatefulSetStrategy()
        strategy.rolling_update = rolling
        if rolling.partition is None:
            rolling.partition = 0
    if spec.revision_history_limit is None:
        spec.revision_history_limit = 10
    policy = spec.persistent_volume_claim_retention_policy
    if policy is None:
        policy = apps.StatefulSetPersistentVolumeClaimRetentionPolicy()
        spec.persistent_volume_claim_retention_policy = policy
    policy.when_deleted = policy.when_deleted or "Retain"
    policy.when_scaled = policy.when_scaled or "Retain"
    default_pod_template(spec.template)


def default_daemon_set(obj: apps.DaemonSet) -> None:
    """``SetDefaults_DaemonSet``: RollingUpdate with ``maxUnavailable: 1`` and
    ``maxSurge: 0``, ten revisions kept."""
    spec = obj.spec
    strategy = spec.update_strategy = spec.update_strategy or apps.DaemonSetUpdateStrategy()
    if not strategy.type:
        strategy.type = "RollingUpdate"
    if strategy.type == "RollingUpdate":
        rolling = strategy.rolling_update = strategy.rolling_update or apps.RollingUpdateDaemonSet()
        if rolling.max_unavailable is None:
            rolling.max_unavailable = 1
        if rolling.max_surge is None:
            rolling.max_surge = 0
    if spec.revision_history_limit is None:
        spec.revision_history_limit = 10
    default_pod_template(spec.template)


# ------------------------------------------------------------------------ Deployment
def validate_deployment(obj: apps.Deployment) -> ErrorList:
    """``ValidateDeploymentSpec``."""
    spec = obj.spec
    errors = nonnegative(spec.replicas, SPEC.child("replicas"))
    errors += validate_selector(spec.selector, SPEC.child("selector"), "deployment")
    errors += _validate_replica_template(spec.template, spec.selector)
    errors += _validate_deployment_strategy(spec.strategy, SPEC.child("strategy"))
    errors += nonnegative(spec.min_ready_seconds, SPEC.child("minReadySeconds"))
    errors += nonnegative(spec.revision_history_limit, SPEC.child("revisionHistoryLimit"))
    deadline = spec.progress_deadline_seconds
    if deadline is not None:
        errors += nonnegative(deadline, SPEC.child("progressDeadlineSeconds"))
        if deadline <= (spec.min_ready_seconds or 0):
            errors.append(
                invalid(
                    SPEC.child("progressDeadlineSeconds"),
                    deadline,
                    "must be greater than minReadySeconds",
                )
            )
    return errors


def _validate_replica_template(
    template: corev1.PodTemplateSpec | None, selector: LabelSelector | None
) -> ErrorList:
    """``ValidatePodTemplateSpecForReplicaSet``: selected, valid, restarted Always."""
    path = SPEC.child("template")
    errors = validate_template(template, selector, path)
    return errors + validate_always_restart(template, path, "ReplicaSet")


def _validate_deployment_strategy(
    strategy: apps.DeploymentStrategy | None, path: Path
) -> ErrorList:
    strategy = strategy or apps.DeploymentStrategy()
    if strategy.type == "Recreate":
        if strategy.rolling_update is not None:
            return [
                forbidden(
                    path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            ]
        return []
    if strategy.type == "RollingUpdate":
        if strategy.rolling_update is None:
            return [
                required(path.child("rollingUpdate"), "this should be defaulted and never be nil")
            ]
        return _validate_rolling_update(strategy.rolling_update, path.child("rollingUpdate"))
    return [not_supported(path, strategy.to_wire(), DEPLOYMENT_STRATEGIES)]


def _validate_rolling_update(rolling: apps.RollingUpdateDeployment, path: Path) -> ErrorList:
    unavailable, surge = rolling.max_unavailable, rolling.max_surge
    errors = validate_int_or_percent(unavailable, path.child("maxUnavailable"))
    errors += validate_int_or_percent(surge, path.child("maxSurge"))
    if int_or_percent(unavailable) == 0 and int_or_percent(surge) == 0:
        errors.append(
            invalid(
                path.child("maxUnavailable"),
                unavailable if unavailable is not None else 0,
                "may not be 0 when `maxSurge` is 0",
            )
        )
    return errors + not_over_100_percent(unavailable, path.child("maxUnavailable"))


def validate_deployment_update(new: apps.Deployment, old: apps.Deployment) -> ErrorList:
    """apps/v1 selectors are immutable (the strategy's ``ValidateUpdate``)."""
    return immutable(new.spec.selector, old.spec.selector, SPEC.child("selector"))


# ------------------------------------------------------------------------ ReplicaSet
def validate_replica_set(obj: apps.ReplicaSet) -> ErrorList:
    """``ValidateReplicaSetSpec`` (its empty-selector text says deployment, as upstream's)."""
    spec = obj.spec
    errors = nonnegative(spec.replicas, SPEC.child("replicas"))
    errors += nonnegative(spec.min_ready_seconds, SPEC.child("minReadySeconds"))
    errors += validate_selector(spec.selector, SPEC.child("selector"), "deployment")
    return errors + _validate_replica_template(spec.template, spec.selector)


def validate_replica_set_update(new: apps.ReplicaSet, old: apps.ReplicaSet) -> ErrorList:
    return immutable(new.spec.selector, old.spec.selector, SPEC.child("selector"))


# ------------------------------------------------------------- ReplicationController
def default_replication_controller(obj: corev1.ReplicationController) -> None:
    """``SetDefaults_ReplicationController``: the template's labels as the selector and as
    the controller's own labels when those are empty; one replica."""
    spec = obj.spec
    labels = template_labels(spec.template)
    if labels:
        if not spec.selector:
            spec.selector = dict(labels)
        if not obj.metadata.labels:
            obj.metadata.labels = dict(labels)
    if spec.replicas is None:
        spec.replicas = 1
    default_pod_template(spec.template)


def validate_replication_controller(obj: corev1.ReplicationController) -> ErrorList:
    """``ValidateReplicationControllerSpec`` and ``ValidatePodTemplateSpecForRC``."""
    spec = obj.spec
    errors = nonnegative(spec.min_ready_seconds, SPEC.child("minReadySeconds"))
    if not spec.selector:
        errors.append(required(SPEC.child("selector")))
    else:
        errors += metavalidation.validate_labels(spec.selector, SPEC.child("selector"))
    errors += nonnegative(spec.replicas, SPEC.child("replicas"))
    path = SPEC.child("template")
    if spec.template is None:
        return [*errors, required(path)]
    if spec.selector:
        wanted = LabelSelector(match_labels=spec.selector)
        errors += selector_mismatch(spec.template, wanted, path)
    errors += validate_template_spec(spec.template, path)
    return errors + validate_always_restart(spec.template, path, "ReplicationController")


def validate_replication_controller_status(
    new: corev1.ReplicationController, old: corev1.ReplicationController
) -> ErrorList:
    """``ValidateReplicationControllerStatus``: a ReplicaSet's rules."""
    return _replica_status(new.status or corev1.ReplicationControllerStatus())


# ----------------------------------------------------------------------- StatefulSet
def validate_stateful_set(obj: apps.StatefulSet) -> ErrorList:
    """``ValidateStatefulSetSpec``."""
    spec = obj.spec
    errors = _validate_pod_management(spec.pod_management_policy)
    errors += _validate_update_strategy(spec.update_strategy, SPEC.child("updateStrategy"))
    errors += _validate_retention(spec.persistent_volume_claim_retention_policy)
    errors += nonnegative(spec.replicas, SPEC.child("replicas"))
    errors += nonnegative(spec.min_ready_seconds, SPEC.child("minReadySeconds"))
    if spec.ordinals is not None:
        errors += nonnegative(spec.ordinals.start, SPEC.child("ordinals.start"))
    errors += validate_selector(spec.selector, SPEC.child("selector"), "statefulset")
    path = SPEC.child("template")
    errors += selector_mismatch(spec.template, spec.selector, path)
    errors += validate_template_metadata(spec.template, path)  # not the pod spec (upstream)
    return errors + validate_always_restart(spec.template, path, "StatefulSet")


def _validate_pod_management(policy: str | None) -> ErrorList:
    path = SPEC.child("podManagementPolicy")
    if not policy:
        return [required(path)]
    if policy not in POD_MANAGEMENT_POLICIES:
        return [invalid(path, policy, "must be 'OrderedReady' or 'Parallel'")]
    return []


def _validate_update_strategy(
    strategy: apps.StatefulSetUpdateStrategy | None, path: Path
) -> ErrorList:
    if strategy is None or not strategy.type:
        return [required(path)]
    rolling = strategy.rolling_update
    if strategy.type == "OnDelete":
        if rolling is not None:
            return [
                invalid(
                    path.child("rollingUpdate"),
                    rolling.to_wire(),
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            ]
        return []
    if strategy.type != "RollingUpdate":
        return [invalid(path, strategy.to_wire(), "must be 'RollingUpdate' or 'OnDelete'")]
    if rolling is None:
        return []
    errors = nonnegative(rolling.partition, path.child("rollingUpdate", "partition"))
    unavailable = rolling.max_unavailable
    if unavailable is not None:
        at = path.child("rollingUpdate", "maxUnavailable")
        errors += validate_int_or_percent(unavailable, at)
        if int_or_percent(unavailable) == 0:
            errors.append(invalid(at, unavailable, "cannot be 0"))
        errors += not_over_100_percent(unavailable, at)
    return errors


def _validate_retention(
    policy: apps.StatefulSetPersistentVolumeClaimRetentionPolicy | None,
) -> ErrorList:
    if policy is None:
        return []
    path = SPEC.child("persistentVolumeClaimRetentionPolicy")
    errors: ErrorList = []
    for name, value in (("whenDeleted", policy.when_deleted), ("whenScaled", policy.when_scaled)):
        if value not in RETENTION_POLICIES:
            errors.append(not_supported(path.child(name), value or "", RETENTION_POLICIES))
    return errors


def validate_stateful_set_update(new: apps.StatefulSet, old: apps.StatefulSet) -> ErrorList:
    """Only the replicas, ordinals, template, update strategy, retention policy and
    minReadySeconds of a StatefulSet may change."""
    new_spec, old_spec = new.spec.to_wire(), old.spec.to_wire()
    for name in STATEFUL_SET_MUTABLE:
        new_spec.pop(name, None)
        old_spec.pop(name, None)
    if new_spec == old_spec:
        return []
    mutable = ", ".join(f"'{name}'" for name in STATEFUL_SET_MUTABLE[:-1])
    return [
        forbidden(
            SPEC,
            f"updates to statefulset spec for fields other than {mutable} and "
            f"'{STATEFUL_SET_MUTABLE[-1]}' are forbidden",
        )
    ]


# ------------------------------------------------------------------------- DaemonSet
def validate_daemon_set(obj: apps.DaemonSet) -> ErrorList:
    """``ValidateDaemonSetSpec``: no ``Required`` for a missing selector (it selects
    nothing, so the template's labels do not match it), as upstream's."""
    spec = obj.spec
    errors: ErrorList = []
    if spec.selector is not None:
        errors += validate_label_selector(spec.selector, SPEC.child("selector"))
    path = SPEC.child("template")
    errors += selector_mismatch(spec.template, spec.selector, path)
    selector = spec.selector
    if selector is not None and not selector.match_labels and not selector.match_expressions:
        errors.append(
            invalid(
                SPEC.child("selector"),
                selector.to_wire(),
                "empty selector is invalid for daemonset",
            )
        )
    errors += validate_template_spec(spec.template or corev1.PodTemplateSpec(), path)
    errors += validate_always_restart(spec.template, path, "DaemonSet")
    errors += nonnegative(spec.min_ready_seconds, SPEC.child("minReadySeconds"))
    errors += _validate_daemon_set_strategy(spec.update_strategy, SPEC.child("updateStrategy"))
    return errors + nonnegative(spec.revision_history_limit, SPEC.child("revisionHistoryLimit"))


def _validate_daemon_set_strategy(
    strategy: apps.DaemonSetUpdateStrategy | None, path: Path
) -> ErrorList:
    strategy = strategy or apps.DaemonSetUpdateStrategy()
    if strategy.type == "OnDelete":
        return []
    if strategy.type != "RollingUpdate":
        return [not_supported(path, strategy.to_wire(), DAEMON_SET_STRATEGIES)]
    if strategy.rolling_update is None:
        return [required(path.child("rollingUpdate"))]
    return _validate_daemon_set_rolling(strategy.rolling_update, path.child("rollingUpdate"))


def _validate_daemon_set_rolling(rolling: apps.RollingUpdateDaemonSet, path: Path) -> ErrorList:
    """``ValidateRollingUpdateDaemonSet``: exactly one of maxUnavailable and maxSurge is
    non-zero."""
    errors: ErrorList = []
    unavailable, surge = rolling.max_unavailable, rolling.max_surge
    has_unavailable = unavailable is not None and int_or_percent(unavailable) != 0
    has_surge = surge is not None and int_or_percent(surge) != 0
    for name, value, present in (
        ("maxUnavailable", unavailable, has_unavailable),
        ("maxSurge", surge, has_surge),
    ):
        if present:
            errors += validate_int_or_percent(value, path.child(name))
            errors += not_over_100_percent(value, path.child(name))
    if has_unavailable and has_surge:
        errors.append(
            invalid(path.child("maxSurge"), surge, "may not be set when maxUnavailable is non-zero")
        )
    elif not has_unavailable and not has_surge:
        errors.append(required(path.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
    return errors


def validate_daemon_set_update(new: apps.DaemonSet, old: apps.DaemonSet) -> ErrorList:
    return immutable(new.spec.selector, old.spec.selector, SPEC.child("selector"))


def validate_daemon_set_status(new: apps.DaemonSet, old: apps.DaemonSet) -> ErrorList:
    """``ValidateDaemonSetStatusUpdate``: counts not negative, collisions never fewer."""
    status = new.status or apps.DaemonSetStatus()
    errors = _counts(
        status,
        Path("status"),
        (
            "current_number_scheduled",
            "number_misscheduled",
            "desired_number_scheduled",
            "number_ready",
            "observed_generation",
            "updated_number_scheduled",
            "number_available",
            "number_unavailable",
            "collision_count",
        ),
    )
    old_count = old.status.collision_count if old.status else None
    return errors + _collision_count(status.collision_count, old_count)


# ---------------------------------------------------------------- ControllerRevision
def validate_controller_revision(obj: apps.ControllerRevision) -> ErrorList:
    errors = nonnegative(obj.revision, Path("revision"))
    if obj.data is None:
        errors.append(required(Path("data"), "data is mandatory"))
    return errors


def validate_controller_revision_update(
    new: apps.ControllerRevision, old: apps.ControllerRevision
) -> ErrorList:
    return immutable(new.data, old.data, Path("data"))


# ---------------------------------------------------------------------------- status
_GREATER = "cannot be greater than status.replicas"


def _counts(status: object, path: Path, names: tuple[str, ...]) -> ErrorList:
    errors: ErrorList = []
    for name in names:
        value = getattr(status, name)
        wire = "".join(p.capitalize() if i else p for i, p in enumerate(name.split("_")))
        errors += nonnegative(value, path.child(wire))
    return errors


def _not_above(value: int | None, limit: int | None, path: Path, detail: str) -> ErrorList:
    if (value or 0) > (limit or 0):
        return [invalid(path, value, detail)]
    return []


def _collision_count(new: int | None, old: int | None) -> ErrorList:
    if old is not None and (new is None or new < old):
        return [invalid(Path("status").child("collisionCount"), new or 0, "cannot be decremented")]
    return []


def validate_deployment_status(new: apps.Deployment, old: apps.Deployment) -> ErrorList:
    """``ValidateDeploymentStatusUpdate``."""
    status, path = new.status or apps.DeploymentStatus(), Path("status")
    errors = _counts(
        status,
        path,
        (
            "observed_generation",
            "replicas",
            "updated_replicas",
            "ready_replicas",
            "available_replicas",
            "unavailable_replicas",
            "collision_count",
        ),
    )
    for name, value in (
        ("updatedReplicas", status.updated_replicas),
        ("readyReplicas", status.ready_replicas),
        ("availableReplicas", status.available_replicas),
    ):
        errors += _not_above(value, status.replicas, path.child(name), _GREATER)
    errors += _not_above(
        status.available_replicas,
        status.ready_replicas,
        path.child("availableReplicas"),
        "cannot be greater than readyReplicas",
    )
    old_count = old.status.collision_count if old.status else None
    return errors + _collision_count(status.collision_count, old_count)


def validate_replica_set_status(new: apps.ReplicaSet, old: apps.ReplicaSet) -> ErrorList:
    """``ValidateReplicaSetStatusUpdate``."""
    return _replica_status(new.status or apps.ReplicaSetStatus())


def _replica_status(
    status: apps.ReplicaSetStatus | corev1.ReplicationControllerStatus,
) -> ErrorList:
    """The counts of a ReplicaSet's or a ReplicationController's status: not negative, and
    none above ``replicas``."""
    errors = _counts(
        status,
        Path("status"),
        (
            "replicas",
            "fully_labeled_replicas",
            "ready_replicas",
            "available_replicas",
            "observed_generation",
        ),
    )
    return errors + _replica_counts_not_above(status)


def _replica_counts_not_above(
    status: apps.ReplicaSetStatus | corev1.ReplicationControllerStatus,
) -> ErrorList:
    """Labelled, ready and available replicas within the replicas, available within ready."""
    path = Path("status")
    errors: ErrorList = []
    for name, value in (
        ("fullyLabeledReplicas", status.fully_labeled_replicas),
        ("readyReplicas", status.ready_replicas),
        ("availableReplicas", status.available_replicas),
    ):
        errors += _not_above(value, status.replicas, path.child(name), _GREATER)
    return errors + _not_above(
        status.available_replicas,
        status.ready_replicas,
        path.child("availableReplicas"),
        "cannot be greater than readyReplicas",
    )


def validate_stateful_set_status(new: apps.StatefulSet, old: apps.StatefulSet) -> ErrorList:
    """``ValidateStatefulSetStatusUpdate``."""
    status, path = new.status or apps.StatefulSetStatus(), Path("status")
    errors = _counts(
        status,
        path,
        (
            "replicas",
            "ready_replicas",
            "current_replicas",
            "updated_replicas",
            "available_replicas",
            "observed_generation",
            "collision_count",
        ),
    )
    for name, value in (
        ("readyReplicas", status.ready_replicas),
        ("currentReplicas", status.current_replicas),
        ("updatedReplicas", status.updated_replicas),
        ("availableReplicas", status.available_replicas),
    ):
        errors += _not_above(value, status.replicas, path.child(name), _GREATER)
    errors += _not_above(
        status.available_replicas,
        status.ready_replicas,
        path.child("availableReplicas"),
        "cannot be greater than status.readyReplicas",
    )
    old_count = old.status.collision_count if old.status else None
    return errors + _collision_count(status.collision_count, old_count)
