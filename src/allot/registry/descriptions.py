"""Descriptions for ``kubectl explain``, written for allot (not copied from upstream).

Keyed by (model name, wire field name); the OpenAPI generator adds them to the schemas of
the DRA, workload and stored kinds, where users most often need to know what a field does.
"""

from __future__ import annotations

FIELD_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("ResourceClaim", "spec"): "What the claim asks for. Immutable after creation.",
    ("ResourceClaim", "status"): "What was allocated, and which consumers hold the claim.",
    ("ResourceClaimSpec", "devices"): "The devices requested, the constraints between them "
    "and configuration handed to their drivers.",
    ("DeviceClaim", "requests"): "One entry per group of devices; each names a DeviceClass "
    "under 'exactly' or lists ordered alternatives under "
    "'firstAvailable'. At most 32.",
    ("DeviceClaim", "constraints"): "Rules across the devices of this claim, such as "
    "matchAttribute (all share a value) or distinctAttribute.",
    ("DeviceClaim", "config"): "Opaque configuration passed to the drivers of the allocated "
    "devices, for all requests or the listed ones.",
    ("DeviceRequest", "name"): "The request's name; containers refer to it in "
    "resources.claims[].request.",
    ("DeviceRequest", "exactly"): "One kind of device, from one DeviceClass. Exactly one of "
    "'exactly' and 'firstAvailable' must be set.",
    ("DeviceRequest", "firstAvailable"): "Alternatives in order of preference; the first "
    "that can be satisfied is allocated (at most 8).",
    ("ExactDeviceRequest", "deviceClassName"): "The DeviceClass whose selectors and "
    "configuration apply. Required.",
    ("ExactDeviceRequest", "selectors"): "CEL expressions that every device must satisfy, "
    "in addition to the class's selectors.",
    ("ExactDeviceRequest", "allocationMode"): "ExactCount (the default, with 'count') or All "
    "(every matching device on the node).",
    ("ExactDeviceRequest", "count"): "How many devices with ExactCount; defaults to 1.",
    ("ExactDeviceRequest", "adminAccess"): "Access devices in use by others, for monitoring; "
    "needs the namespace label "
    "resource.kubernetes.io/admin-access=true.",
    ("ExactDeviceRequest", "tolerations"): "Device taints this request tolerates.",
    ("ExactDeviceRequest", "capacity"): "Amounts of a shareable device's capacity to consume.",
    ("DeviceClass", "spec"): "How devices are selected and configured for claims using this class.",
    ("DeviceClassSpec", "selectors"): "CEL expressions that every device of this class must "
    "satisfy.",
    ("DeviceClassSpec", "config"): "Opaque driver configuration for devices of this class.",
    ("DeviceClassSpec", "extendedResourceName"): "Lets pods request this class through "
    "resources.requests with this name.",
    ("ResourceSlice", "spec"): "Devices (or shared counters) a driver publishes for a pool.",
    ("ResourceSliceSpec", "driver"): "The DRA driver publishing these devices.",
    ("ResourceSliceSpec", "pool"): "The pool the slice belongs to, with its generation and "
    "slice count.",
    ("ResourceSliceSpec", "nodeName"): "The node whose devices these are.",
    ("ResourceSliceSpec", "devices"): "The devices, with attributes and capacities.",
    ("ResourceSliceSpec", "sharedCounters"): "Counter sets consumed by partitionable devices "
    "(for example MIG memory slices).",
    ("Device", "attributes"): "Typed properties selectors can test "
    "(device.attributes[domain].name).",
    ("Device", "capacity"): "Quantities such as memory (device.capacity[domain].name).",
    ("Device", "consumesCounters"): "Shared counters this device uses when allocated.",
    ("ResourceClaimStatus", "allocation"): "The devices chosen by the scheduler, and where "
    "the claim can be used.",
    ("ResourceClaimStatus", "reservedFor"): "The consumers (pods) currently using the claim.",
    # ---------------------------------------------------------------- workloads
    ("DeploymentSpec", "replicas"): "How many pods to run (default 1).",
    ("DeploymentSpec", "selector"): "Which pods belong to the Deployment; must match the "
    "template's labels and cannot change after creation.",
    ("DeploymentSpec", "template"): "The pod each replica is made from; changing it starts "
    "a rollout.",
    ("DeploymentSpec", "strategy"): "How a rollout replaces old pods with new ones: "
    "RollingUpdate (the default) or Recreate.",
    ("DeploymentSpec", "minReadySeconds"): "How long a new pod must be ready before it "
    "counts as available.",
    ("DeploymentSpec", "revisionHistoryLimit"): "How many old ReplicaSets to keep for "
    "rollbacks (default 10).",
    ("DeploymentSpec", "paused"): "While true, template changes do not start a rollout.",
    ("DeploymentSpec", "progressDeadlineSeconds"): "How long a rollout may make no progress "
    "before the Progressing condition turns False (default 600).",
    ("DeploymentStrategy", "type"): "RollingUpdate (replace pods gradually) or Recreate "
    "(stop all old pods first).",
    ("DeploymentStrategy", "rollingUpdate"): "Limits of a rolling update; only with type "
    "RollingUpdate.",
    ("RollingUpdateDeployment", "maxSurge"): "How many pods above the desired count may "
    "exist during a rollout: a number or a percentage (default 25%). Not 0 together with "
    "maxUnavailable 0.",
    ("RollingUpdateDeployment", "maxUnavailable"): "How many desired pods may be unavailable "
    "during a rollout: a number or a percentage (default 25%).",
    ("ReplicaSetSpec", "replicas"): "How many pods to keep running (default 1).",
    ("ReplicaSetSpec", "selector"): "Which pods the ReplicaSet counts; must match the "
    "template's labels.",
    ("StatefulSetSpec", "serviceName"): "The headless Service that gives the pods stable "
    "network names (<pod>.<serviceName>).",
    ("StatefulSetSpec", "podManagementPolicy"): "OrderedReady (one pod at a time, in ordinal "
    "order; the default) or Parallel.",
    ("StatefulSetSpec", "updateStrategy"): "RollingUpdate (the default, from the highest "
    "ordinal down to the partition) or OnDelete.",
    ("StatefulSetSpec", "volumeClaimTemplates"): "PersistentVolumeClaims each pod gets its "
    "own copy of (carried, not provisioned, by allot).",
    ("StatefulSetSpec", "ordinals"): "The first ordinal of the pod names (default 0).",
    ("DaemonSetSpec", "selector"): "Which pods the DaemonSet counts; must match the "
    "template's labels. Immutable.",
    ("DaemonSetSpec", "template"): "The pod run on every node whose labels, affinity and "
    "taints admit it (nodeSelector, required node affinity, tolerations).",
    ("DaemonSetSpec", "updateStrategy"): "RollingUpdate (the default: maxUnavailable 1, or "
    "maxSurge to start the new pod first) or OnDelete.",
    ("DaemonSetSpec", "minReadySeconds"): "How long a new pod must be ready before it counts "
    "as available (default 0).",
    ("RollingUpdateDaemonSet", "maxUnavailable"): "How many nodes may be without an available "
    "pod during an update: a number or a percentage, rounded up (default 1).",
    ("RollingUpdateDaemonSet", "maxSurge"): "On how many nodes a new pod may start before the "
    "old one goes: a number or a percentage (default 0; not with maxUnavailable).",
    ("ReplicationControllerSpec", "replicas"): "How many pods to keep running (default 1).",
    ("ReplicationControllerSpec", "selector"): "Labels the pods must have to be counted "
    "(a plain map; defaults to the template's labels).",
    ("PersistentVolumeSpec", "capacity"): "storage: the volume's size. Required.",
    ("PersistentVolumeSpec", "persistentVolumeReclaimPolicy"): "Retain (the default), Delete "
    "or Recycle once its claim goes (allot binds no claim).",
    ("PersistentVolumeSpec", "claimRef"): "The claim this volume is reserved for (stored; "
    "allot binds no claim).",
    ("JobSpec", "parallelism"): "How many pods may run at once (default 1).",
    ("JobSpec", "completions"): "How many pods must succeed; unset means any one success "
    "finishes a work-queue Job.",
    ("JobSpec", "completionMode"): "NonIndexed (the default) or Indexed: each pod gets an "
    "index from 0 to completions-1.",
    ("JobSpec", "backoffLimit"): "How many pod failures to retry before the Job fails (default 6).",
    ("JobSpec", "backoffLimitPerIndex"): "Retries per index of an Indexed Job.",
    ("JobSpec", "activeDeadlineSeconds"): "How long the Job may run before it is failed.",
    ("JobSpec", "ttlSecondsAfterFinished"): "Delete the finished Job after this many seconds.",
    ("JobSpec", "podFailurePolicy"): "Rules on exit codes and pod conditions that fail the "
    "Job, fail an index, ignore a failure or count it.",
    ("JobSpec", "successPolicy"): "When an Indexed Job may succeed before all indexes have.",
    ("JobSpec", "suspend"): "While true, no pods run; resuming starts them.",
    ("JobSpec", "manualSelector"): "Leave unset: the API server gives the Job a selector "
    "on its uid.",
    ("JobSpec", "podReplacementPolicy"): "When a replacement pod may start: once the old one "
    "is terminating (TerminatingOrFailed) or only once it has failed (Failed).",
    ("CronJobSpec", "schedule"): "When to run, in cron format (minute hour day-of-month "
    "month day-of-week) or a descriptor such as @hourly.",
    ("CronJobSpec", "timeZone"): "The IANA time zone of the schedule (default: the "
    "controller's, UTC).",
    ("CronJobSpec", "concurrencyPolicy"): "Allow (the default), Forbid or Replace a run that "
    "is still going when the next is due.",
    ("CronJobSpec", "jobTemplate"): "The Job created at each scheduled time.",
    ("ServiceSpec", "type"): "ClusterIP (the default), NodePort, LoadBalancer or "
    "ExternalName. allot stores Services; it routes no traffic.",
    ("ServiceSpec", "clusterIP"): "The virtual IP, allocated from 10.96.0.0/12 unless given; "
    "None makes the Service headless.",
    ("ServiceSpec", "selector"): "The labels of the pods the Service stands for.",
    ("ServiceSpec", "ports"): "The ports the Service exposes; targetPort defaults to port.",
    ("IngressSpec", "ingressClassName"): "The IngressClass whose controller should serve "
    "this Ingress; without it, the cluster's default class. allot runs no ingress "
    "controller: Ingresses are stored and route nothing.",
    ("IngressSpec", "rules"): "Host rules: each maps a host (or every host) and HTTP paths "
    "to backends.",
    ("IngressSpec", "defaultBackend"): "Where requests that match no rule go; required when "
    "there are no rules.",
    ("IngressSpec", "tls"): "Hosts served over TLS on port 443, with the Secret holding the "
    "certificate.",
    ("HTTPIngressPath", "pathType"): "Exact, Prefix (element by element on '/') or "
    "ImplementationSpecific. Required.",
    ("HorizontalPodAutoscalerSpec", "scaleTargetRef"): "The object to scale: a Deployment, "
    "ReplicaSet or StatefulSet (anything with a scale subresource).",
    ("HorizontalPodAutoscalerSpec", "minReplicas"): "The fewest replicas to scale down to; "
    "defaults to 1.",
    ("HorizontalPodAutoscalerSpec", "maxReplicas"): "The most replicas to scale up to; at "
    "least minReplicas. Required.",
    ("HorizontalPodAutoscalerSpec", "metrics"): "What to scale on (default: 80% average "
    "CPU). allot runs no autoscaler and no metrics server: replicas are not changed.",
    ("HorizontalPodAutoscalerSpec", "behavior"): "How fast to scale up and down: "
    "stabilization windows and rate policies.",
    ("NetworkPolicySpec", "podSelector"): "The pods of the namespace the policy applies to; "
    "{} selects them all. allot stores policies; it does not enforce them.",
    ("NetworkPolicySpec", "policyTypes"): "Ingress, Egress or both; defaults to Ingress, plus "
    "Egress when egress rules are given.",
    ("PriorityClass", "value"): "The priority pods naming this class get (spec.priority); at "
    "most 1000000000 for user classes.",
    ("PriorityClass", "globalDefault"): "Whether pods without a priorityClassName get this "
    "class. At most one class may be the default.",
    ("PriorityClass", "preemptionPolicy"): "PreemptLowerPriority (the default) or Never; "
    "copied into the pods' spec.preemptionPolicy.",
    ("PersistentVolumeClaimSpec", "accessModes"): "ReadWriteOnce, ReadOnlyMany, ReadWriteMany "
    "or ReadWriteOncePod (alone). At least one.",
    ("PersistentVolumeClaimSpec", "resources"): "requests.storage: the size asked for. Required.",
    ("PersistentVolumeClaimSpec", "storageClassName"): "The StorageClass to provision from; "
    "absent: the default class, '': none. allot has no provisioner: claims stay Pending.",
    ("StorageClass", "provisioner"): "The driver that would provision volumes of this class "
    "(none runs in allot). Immutable.",
    ("StorageClass", "reclaimPolicy"): "Delete (the default) or Retain a volume when its claim "
    "goes. Immutable.",
    ("StorageClass", "volumeBindingMode"): "Immediate (the default) or WaitForFirstConsumer "
    "(bind once a pod uses the claim). Immutable.",
}
