"""Descriptions for ``kubectl explain``, written for allot (not copied from upstream).

:data:`FIELD_DESCRIPTIONS` is keyed by (model name, wire field name), :data:`TYPE_DESCRIPTIONS`
by model name; the OpenAPI generator adds them to the schemas of the DRA, workload, stored
and allot's own kinds, where users most often need to know what a field does. Every field
under a Tenant and a ResourceClaim has one (``tests/test_openapi_descriptions.py``); the
``apiVersion``, ``kind`` and ``metadata`` of every kind get :data:`OBJECT_FIELDS`.
"""

from __future__ import annotations

_SHARE = {
    "guaranteed": "Always the tenant's: work borrowing it is preempted to give it back.",
    "borrowingLimit": "The most the tenant may borrow beyond 'guaranteed' from the cohort; "
    "absent: no limit.",
    "lendingLimit": "The most of its idle guarantee the tenant lends; absent: all of it.",
}
"""The fields of a fair-sharing share, of GPU memory (SharedAmount) or a class (ClassShare)."""
_SWITCH = {
    "enabled": "false turns this sync off; it is on otherwise.",
    "patches": "vCluster's patches; accepted only empty.",
}
"""The fields of a vCluster sync switch, with or without a selector."""

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
    "(for example the memory slices of a partitionable GPU).",
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
    # -------------------------------------------------------- claims, in full
    ("DeviceSubRequest", "name"): "The alternative's name; an allocation result names it as "
    "<request>/<subrequest>.",
    ("DeviceSubRequest", "deviceClassName"): "The DeviceClass this alternative allocates from.",
    ("DeviceSubRequest", "selectors"): "CEL expressions every device of this alternative must "
    "satisfy, besides the class's.",
    ("DeviceSubRequest", "allocationMode"): "ExactCount (the default, with 'count') or All.",
    ("DeviceSubRequest", "count"): "How many devices with ExactCount; defaults to 1.",
    ("DeviceSubRequest", "tolerations"): "Device taints this alternative tolerates.",
    ("DeviceSubRequest", "capacity"): "Amounts of a shareable device's capacity to consume.",
    ("DeviceSelector", "cel"): "A CEL expression over the device (device.driver, "
    "device.attributes, device.capacity).",
    ("CELDeviceSelector", "expression"): "Must evaluate to true for a device to be chosen, "
    "e.g. device.attributes[device.driver].productName.contains('H100').",
    ("DeviceToleration", "key"): "The taint key this toleration matches; empty with Exists "
    "matches every taint.",
    ("DeviceToleration", "operator"): "Equal (the default: key and value match) or Exists "
    "(any value).",
    ("DeviceToleration", "value"): "The taint value to match with Equal.",
    ("DeviceToleration", "effect"): "The taint effect to match (NoSchedule or NoExecute); "
    "empty matches both.",
    ("DeviceToleration", "tolerationSeconds"): "With NoExecute: how long the claim may keep "
    "a tainted device before it is evicted.",
    ("CapacityRequirements", "requests"): "Per capacity name, the amount to take from a "
    "device that allows several allocations.",
    ("DeviceConstraint", "requests"): "The requests this constraint applies to; empty: all.",
    ("DeviceConstraint", "matchAttribute"): "A fully qualified attribute every chosen device "
    "must have, with the same value (for example a shared PCIe root).",
    ("DeviceConstraint", "distinctAttribute"): "A fully qualified attribute whose value must "
    "differ between all chosen devices.",
    ("DeviceClaimConfiguration", "requests"): "The requests this configuration is for; empty: all.",
    ("DeviceClaimConfiguration", "opaque"): "Configuration in the driver's own format.",
    ("OpaqueDeviceConfiguration", "driver"): "The driver that reads this configuration.",
    ("OpaqueDeviceConfiguration", "parameters"): "The driver's parameters, a JSON object, "
    "usually with its own apiVersion and kind.",
    ("AllocationResult", "devices"): "The allocated devices and the configuration they get.",
    ("AllocationResult", "nodeSelector"): "The nodes where the allocated devices can be used.",
    ("AllocationResult", "allocationTimestamp"): "When the claim was allocated.",
    ("DeviceAllocationResult", "results"): "One entry per allocated device.",
    ("DeviceAllocationResult", "config"): "The configuration of the class and the claim, for "
    "the drivers of the allocated devices.",
    ("DeviceRequestAllocationResult", "request"): "The request (or request/subrequest) this "
    "device satisfies.",
    ("DeviceRequestAllocationResult", "driver"): "The driver of the device.",
    ("DeviceRequestAllocationResult", "pool"): "The pool the device was published in.",
    ("DeviceRequestAllocationResult", "device"): "The device's name within its pool.",
    ("DeviceRequestAllocationResult", "adminAccess"): "Whether the device was allocated for "
    "admin access, beside other users.",
    ("DeviceRequestAllocationResult", "tolerations"): "The request's tolerations of device "
    "taints at allocation time.",
    ("DeviceRequestAllocationResult", "bindingConditions"): "Conditions the device must "
    "report true before a pod using it is bound.",
    ("DeviceRequestAllocationResult", "bindingFailureConditions"): "Conditions that, when "
    "true, make binding fail and the pod be scheduled again.",
    ("DeviceRequestAllocationResult", "shareID"): "Tells apart allocations of one device "
    "that allows several.",
    ("DeviceRequestAllocationResult", "consumedCapacity"): "What this allocation takes of "
    "the device's shareable capacity.",
    ("DeviceAllocationConfiguration", "source"): "FromClass or FromClaim: where the "
    "configuration came from.",
    ("DeviceAllocationConfiguration", "requests"): "The requests it applies to; empty: all.",
    ("DeviceAllocationConfiguration", "opaque"): "Configuration in the driver's own format.",
    ("NodeSelector", "nodeSelectorTerms"): "Terms ORed together; a node matching any one is "
    "selected.",
    ("NodeSelectorTerm", "matchExpressions"): "Requirements on node labels, ANDed.",
    ("NodeSelectorTerm", "matchFields"): "Requirements on node fields (metadata.name), ANDed.",
    ("NodeSelectorRequirement", "key"): "The label (or field) the requirement tests.",
    ("NodeSelectorRequirement", "operator"): "In, NotIn, Exists, DoesNotExist, Gt or Lt.",
    ("NodeSelectorRequirement", "values"): "The values for In and NotIn (one integer for Gt "
    "and Lt, none for Exists and DoesNotExist).",
    ("ResourceClaimConsumerReference", "apiGroup"): "The consumer's API group; empty for "
    "core kinds such as pods.",
    ("ResourceClaimConsumerReference", "resource"): "The consumer's resource, for example pods.",
    ("ResourceClaimConsumerReference", "name"): "The consumer's name.",
    ("ResourceClaimConsumerReference", "uid"): "The consumer's uid: one instance only.",
    ("ResourceClaimStatus", "devices"): "What the drivers report about each allocated device.",
    ("AllocatedDeviceStatus", "driver"): "The driver of the device.",
    ("AllocatedDeviceStatus", "pool"): "The pool of the device.",
    ("AllocatedDeviceStatus", "device"): "The device's name within its pool.",
    ("AllocatedDeviceStatus", "shareID"): "Which allocation of a shared device this is.",
    ("AllocatedDeviceStatus", "conditions"): "The device's state as its driver reports it.",
    ("AllocatedDeviceStatus", "data"): "Driver-specific data about the device.",
    ("AllocatedDeviceStatus", "networkData"): "The network interface the device provides.",
    ("NetworkDeviceData", "interfaceName"): "The interface's name in the pod.",
    ("NetworkDeviceData", "ips"): "The interface's addresses, in CIDR form.",
    ("NetworkDeviceData", "hardwareAddress"): "The interface's MAC address.",
    # ---------------------------------------------------------------- tenants
    ("Tenant", "spec"): "What the team may use: its device classes, quotas or shares, and "
    "what the sync carries between its cluster and the host.",
    ("Tenant", "status"): "What the platform made of the spec: the tenant's host namespace, "
    "its API server and the classes it is entitled to.",
    ("TenantSpec", "deviceClassSelector"): "Labels of the host DeviceClasses the tenant may "
    "claim from; defaults to sync.fromHost.deviceClasses.selector.",
    ("TenantSpec", "quota"): "Hard limits in the tenant's host namespace. Use this or "
    "'sharing', not both.",
    ("TenantSpec", "sharing"): "Guaranteed shares in a cohort, with borrowing and reclaim. "
    "Use this or 'quota', not both.",
    ("TenantSpec", "sync"): "What the sync copies between the tenant's cluster and the host, "
    "in vCluster's keys.",
    ("TenantSpec", "alerts"): "This tenant's alert thresholds, instead of the platform's.",
    ("TenantSpec", "storage"): "How much the tenant's own cluster may keep in the platform's "
    "store.",
    ("TenantQuota", "hard"): "ResourceQuota limits (for example "
    "gpu-whole.deviceclass.resource.k8s.io/devices: 2), enforced in the host namespace.",
    ("TenantQuota", "gpuMemory"): "The most GPU memory the tenant's allocated devices may "
    "add up to (their memory capacity), for example 80Gi.",
    ("TenantSharing", "cohort"): "Tenants of the same cohort lend each other what they leave idle.",
    ("TenantSharing", "deviceClasses"): "The tenant's share per host DeviceClass, counted in "
    "devices.",
    ("TenantSharing", "gpuMemory"): "A share of GPU memory, counted from the memory of the "
    "devices each request's class selects.",
    ("TenantSharing", "defaultPriority"): "The priority of a workload without the "
    "allot.dev/priority label (default 0).",
    ("TenantSharing", "preemption"): "When waiting work may evict admitted work.",
    **{(model, f): text for model in ("SharedAmount", "ClassShare") for f, text in _SHARE.items()},
    ("ClassShare", "name"): "The host DeviceClass this share counts devices of.",
    ("SharingPreemption", "reclaimWithinCohort"): "Any (the default), LowerPriority or Never: "
    "whether work within the guarantee evicts other tenants' borrowing work.",
    ("SharingPreemption", "withinTenant"): "LowerPriority (the default) or Never: whether "
    "work evicts the tenant's own lower-priority work.",
    ("TenantSync", "toHost"): "What the sync copies from the tenant's cluster to the host.",
    ("TenantSync", "fromHost"): "What the sync shows the tenant from the host.",
    ("SyncToHost", "resourceClaims"): "Copy the tenant's ResourceClaims to the host to be "
    "allocated (on unless enabled is false).",
    ("SyncToHost", "resourceClaimTemplates"): "Copy the tenant's ResourceClaimTemplates to the "
    "host (on unless enabled is false).",
    **{(m, f): text for m in ("EnableSwitch", "DeviceClassSync") for f, text in _SWITCH.items()},
    ("SyncFromHost", "deviceClasses"): "Show the tenant the host DeviceClasses it is entitled "
    "to (on unless enabled is false).",
    ("SyncFromHost", "nodes"): "Which host nodes the tenant sees.",
    ("DeviceClassSync", "selector"): "Labels of the host DeviceClasses to show, and the "
    "default of spec.deviceClassSelector.",
    ("NodeSync", "enabled"): "false shows no nodes; otherwise a node appears while one of the "
    "tenant's pods runs on it.",
    ("NodeSync", "syncBackChanges"): "vCluster's key, accepted and ignored: nodes are "
    "read-only in a tenant.",
    ("NodeSync", "clearImageStatus"): "vCluster's key, accepted and ignored.",
    ("NodeSync", "selector"): "More nodes to show: every node, or those with given labels.",
    ("NodeSyncSelector", "all"): "Show every host node.",
    ("NodeSyncSelector", "labels"): "Also show the host nodes with these labels.",
    ("TenantAlerts", "pendingClaimSeconds"): "ClaimPendingTooLong: how long a claim may stay "
    "unallocated (the platform's default is 300).",
    ("TenantAlerts", "quotaUsagePercent"): "TenantQuotaHigh: the percentage of a quota used that "
    "raises it, 1 to 100 (default 90).",
    ("TenantAlerts", "belowGuaranteeSeconds"): "TenantBelowGuarantee: how long work within "
    "the guarantee may wait while the tenant holds less than it (default 120).",
    ("TenantStorage", "objects"): "The most objects of any kind (default 10000).",
    ("TenantStorage", "bytes"): "The most bytes of stored objects (default 256Mi).",
    ("TenantStatus", "phase"): "Ready once the tenant's cluster is served.",
    ("TenantStatus", "namespace"): "The host namespace where the tenant's claims and pods run.",
    ("TenantStatus", "server"): "The URL of the tenant's own API server.",
    ("TenantStatus", "entitledDeviceClasses"): "The host DeviceClasses the selector matches now.",
    ("TenantStatus", "observedGeneration"): "The generation of the spec this status is for.",
    ("TenantStatus", "conditions"): "Entitled: whether the selector matches any DeviceClass.",
}

TYPE_DESCRIPTIONS: dict[str, str] = {
    "ResourceClaim": "A request for devices (GPUs, GPU partitions...) that pods use. The "
    "scheduler allocates them; status says what was allocated and who uses it.",
    "ResourceClaimSpec": "The devices a claim asks for, with constraints and configuration.",
    "DeviceClaim": "The devices of a claim: requests, constraints across them and driver "
    "configuration.",
    "DeviceRequest": "One request of a claim: 'exactly' one kind of device, or "
    "'firstAvailable' alternatives.",
    "ExactDeviceRequest": "Devices of one DeviceClass, narrowed by selectors.",
    "DeviceSubRequest": "One alternative of a firstAvailable request.",
    "DeviceSelector": "A test a device must pass.",
    "CELDeviceSelector": "A CEL expression that selects devices.",
    "DeviceToleration": "Lets a request use devices with a matching taint.",
    "CapacityRequirements": "How much of a shareable device's capacity a request takes.",
    "DeviceConstraint": "A rule across the devices allocated for some requests.",
    "DeviceClaimConfiguration": "Driver configuration for some (or all) requests of a claim.",
    "OpaqueDeviceConfiguration": "Configuration only its driver understands.",
    "ResourceClaimStatus": "What was allocated for the claim and who uses it.",
    "AllocationResult": "The outcome of allocating a claim.",
    "DeviceAllocationResult": "The allocated devices and their configuration.",
    "DeviceRequestAllocationResult": "One allocated device and the request it satisfies.",
    "DeviceAllocationConfiguration": "Configuration handed to the drivers of the allocated "
    "devices.",
    "NodeSelector": "Nodes chosen by label or field requirements.",
    "NodeSelectorTerm": "Requirements a node must all meet.",
    "NodeSelectorRequirement": "One requirement on a node label or field.",
    "ResourceClaimConsumerReference": "A consumer (usually a pod) that holds the claim.",
    "AllocatedDeviceStatus": "What a driver reports about one allocated device.",
    "NetworkDeviceData": "The network interface an allocated device provides.",
    "Tenant": "One team's entitlement on the shared fleet (allot): which device classes it "
    "may claim, its quotas or shares, and its own Kubernetes cluster.",
    "TenantSpec": "What the team may use and what the sync carries.",
    "TenantStatus": "What the platform made of the Tenant.",
    "TenantQuota": "Hard limits, enforced in the tenant's host namespace.",
    "TenantSharing": "Fair sharing: guaranteed shares in a cohort, borrowing what others leave "
    "idle, reclaimed by preemption.",
    "SharedAmount": "A share of one resource: guaranteed, and how much to borrow and lend.",
    "ClassShare": "A share of one host DeviceClass, in devices.",
    "SharingPreemption": "When waiting work may evict admitted work.",
    "TenantSync": "The sync between the tenant's cluster and the host, in vCluster's keys.",
    "SyncToHost": "What the tenant's cluster sends to the host.",
    "SyncFromHost": "What the host shows the tenant's cluster.",
    "EnableSwitch": "A sync that is on unless enabled is false.",
    "DeviceClassSync": "The host DeviceClasses the tenant sees.",
    "NodeSync": "The host nodes the tenant sees.",
    "NodeSyncSelector": "Which host nodes to show besides those running the tenant's pods.",
    "TenantAlerts": "This tenant's alert thresholds.",
    "TenantStorage": "What the tenant's own cluster may keep in the platform's store.",
}

OBJECT_FIELDS: dict[str, str] = {
    "apiVersion": "The group and version this object is written in, for example "
    "resource.k8s.io/v1.",
    "kind": "The kind of this object, in CamelCase, for example ResourceClaim.",
    "metadata": "The object's name, namespace, labels, annotations, owners and the server's "
    "bookkeeping.",
}
