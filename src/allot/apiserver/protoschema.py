"""Field numbers of the workload objects ``kubectl create`` sends as protobuf.

``kubectl create deployment|job|cronjob|secret|service|serviceaccount`` post their object
as ``application/vnd.kubernetes.protobuf``. Each message below maps a field number (from
``k8s.io/api``'s ``generated.proto``) to its JSON name and shape (how
:mod:`allot.apiserver.protobuf` decodes it into the JSON the API server would have
decoded); a field number a message here does not list is refused there, naming it, never
dropped, unless it holds its zero value (a field kubectl's Go types always write).
Data only.
"""

from __future__ import annotations

from typing import NamedTuple


class Field(NamedTuple):
    name: str
    shape: str
    """How the value is decoded. A scalar's zero value (``""``, 0, false) is omitted, as Go
    writes its non-pointer fields always and JSON leaves them out; a ``*`` shape is a
    pointer field, whose zero value is kept. "ignored": set by the server, never by a
    create."""
    message: str = ""  # the message type of message-shaped fields


def _fields(*entries: tuple[int, str, str] | tuple[int, str, str, str]) -> dict[int, Field]:
    return {entry[0]: Field(*entry[1:]) for entry in entries}


SCHEMAS: dict[str, dict[int, Field]] = {
    "ObjectMeta": _fields(
        (1, "name", "string"),
        (2, "generateName", "string"),
        (3, "namespace", "string"),
        *((number, "", "ignored") for number in (4, 5, 6, 7, 8, 9, 10, 17)),  # the server's
        (11, "labels", "string_map"),
        (12, "annotations", "string_map"),
        (14, "finalizers", "strings"),
    ),
    "LabelSelector": _fields(
        (1, "matchLabels", "string_map"),
        (2, "matchExpressions", "messages", "LabelSelectorRequirement"),
    ),
    "LabelSelectorRequirement": _fields(
        (1, "key", "string"), (2, "operator", "string"), (3, "values", "strings")
    ),
    "PodTemplateSpec": _fields(
        (1, "metadata", "message", "ObjectMeta"), (2, "spec", "message", "PodSpec")
    ),
    "PodSpec": _fields(
        (2, "containers", "messages", "Container"),
        (3, "restartPolicy", "string"),
        (4, "terminationGracePeriodSeconds", "int*"),
        (5, "activeDeadlineSeconds", "int*"),
        (6, "dnsPolicy", "string"),
        (7, "nodeSelector", "string_map"),
        (8, "serviceAccountName", "string"),
        (19, "schedulerName", "string"),
        (20, "initContainers", "messages", "Container"),
    ),
    "Container": _fields(
        (1, "name", "string"),
        (2, "image", "string"),
        (3, "command", "strings"),
        (4, "args", "strings"),
        (5, "workingDir", "string"),
        (6, "ports", "messages", "ContainerPort"),
        (7, "env", "messages", "EnvVar"),
        (8, "resources", "message", "ResourceRequirements"),
        (13, "terminationMessagePath", "string"),
        (14, "imagePullPolicy", "string"),
        (16, "stdin", "bool"),
        (17, "stdinOnce", "bool"),
        (18, "tty", "bool"),
        (20, "terminationMessagePolicy", "string"),
    ),
    "ContainerPort": _fields(
        (1, "name", "string"),
        (2, "hostPort", "int"),
        (3, "containerPort", "int"),
        (4, "protocol", "string"),
        (5, "hostIP", "string"),
    ),
    "EnvVar": _fields((1, "name", "string"), (2, "value", "string")),
    "ResourceRequirements": _fields((1, "limits", "quantity_map"), (2, "requests", "quantity_map")),
    "DeploymentSpec": _fields(
        (1, "replicas", "int*"),
        (2, "selector", "message", "LabelSelector"),
        (3, "template", "message", "PodTemplateSpec"),
        (4, "strategy", "message", "DeploymentStrategy"),
        (5, "minReadySeconds", "int"),
        (6, "revisionHistoryLimit", "int*"),
        (7, "paused", "bool"),
        (9, "progressDeadlineSeconds", "int*"),
    ),
    "DeploymentStrategy": _fields(
        (1, "type", "string"), (2, "rollingUpdate", "message", "RollingUpdateDeployment")
    ),
    "RollingUpdateDeployment": _fields(
        (1, "maxUnavailable", "int_or_string"), (2, "maxSurge", "int_or_string")
    ),
    "JobSpec": _fields(
        (1, "parallelism", "int*"),
        (2, "completions", "int*"),
        (3, "activeDeadlineSeconds", "int*"),
        (4, "selector", "message", "LabelSelector"),
        (5, "manualSelector", "bool*"),
        (6, "template", "message", "PodTemplateSpec"),
        (7, "backoffLimit", "int*"),
        (8, "ttlSecondsAfterFinished", "int*"),
        (9, "completionMode", "string*"),
        (10, "suspend", "bool*"),
    ),
    "JobTemplateSpec": _fields(
        (1, "metadata", "message", "ObjectMeta"), (2, "spec", "message", "JobSpec")
    ),
    "CronJobSpec": _fields(
        (1, "schedule", "string"),
        (2, "startingDeadlineSeconds", "int*"),
        (3, "concurrencyPolicy", "string"),
        (4, "suspend", "bool*"),
        (5, "jobTemplate", "message", "JobTemplateSpec"),
        (6, "successfulJobsHistoryLimit", "int*"),
        (7, "failedJobsHistoryLimit", "int*"),
        (8, "timeZone", "string*"),
    ),
    "ServiceSpec": _fields(
        (1, "ports", "messages", "ServicePort"),
        (2, "selector", "string_map"),
        (3, "clusterIP", "string"),
        (4, "type", "string"),
        (5, "externalIPs", "strings"),
        (7, "sessionAffinity", "string"),
        (10, "externalName", "string"),
        (18, "clusterIPs", "strings"),
    ),
    "ServicePort": _fields(
        (1, "name", "string"),
        (2, "protocol", "string"),
        (3, "port", "int"),
        (4, "targetPort", "int_or_string"),
        (5, "nodePort", "int"),
        (6, "appProtocol", "string"),
    ),
}
OBJECTS: dict[str, dict[int, Field]] = {
    "Deployment": _fields((2, "spec", "message", "DeploymentSpec")),
    "Job": _fields((2, "spec", "message", "JobSpec")),
    "CronJob": _fields((2, "spec", "message", "CronJobSpec")),
    "Service": _fields((2, "spec", "message", "ServiceSpec")),
    "Secret": _fields(
        (2, "data", "bytes_map"),
        (3, "type", "string"),
        (4, "stringData", "string_map"),
        (5, "immutable", "bool*"),
    ),
    "ServiceAccount": _fields((4, "automountServiceAccountToken", "bool*")),
}
"""The fields of each top-level object besides ``metadata`` (1); ``status`` (3 where the
kind has one) is ignored, as the API server drops a created object's status."""
STATUS_FIELD = {"Deployment": 3, "Job": 3, "CronJob": 3, "Service": 3}
