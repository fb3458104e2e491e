"""Type-check ValidatingAdmissionPolicy expressions the way a real API server does.

allot evaluates admission expressions with ``object``, ``oldObject`` and ``params`` as
dynamic values, which is what Kubernetes does at run time. A real 1.36 API server also
type-checks every policy against the schemas of the kinds it matches
(``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking.go``:
``object``/``oldObject`` typed per matched kind, subresources skipped, ``params`` typed by
``paramKind``, ``request`` as ``BuildRequestType`` in ``admission/plugin/cel/compile.go``)
and writes what does not compile into the policy's ``status.typeChecking``. A rendered
policy with such warnings works, but looks broken to whoever applies it.

The types come from the official Python client's models (``kubernetes.client``, generated
from upstream's OpenAPI), turned into protobuf messages so that the C++ CEL checker in
``cel_expr_python`` checks field names and overloads as cel-go does for declared types.
Used by ``tests/test_rendered_policy_types.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import kubernetes.client as k8s
from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2, timestamp_pb2

from allot.cel import values
from allot.cel.compiler import new_env

F = descriptor_pb2.FieldDescriptorProto
PACKAGE = "k8s"
SCALARS = {
    "str": F.TYPE_STRING,
    "int": F.TYPE_INT64,
    "bool": F.TYPE_BOOL,
    "float": F.TYPE_DOUBLE,
    "bytes": F.TYPE_BYTES,
    "bytearray": F.TYPE_BYTES,
}
KINDS = {  # (group, kind) -> the client's model of that kind's v1 schema
    ("resource.k8s.io", "ResourceClaim"): "ResourceV1ResourceClaim",
    ("resource.k8s.io", "ResourceClaimTemplate"): "V1ResourceClaimTemplate",
    ("", "Pod"): "V1Pod",
    ("", "ConfigMap"): "V1ConfigMap",
}
RESOURCES = {  # (group, plural) -> kind, for a policy's resourceRules
    ("resource.k8s.io", "resourceclaims"): "ResourceClaim",
    ("resource.k8s.io", "resourceclaimtemplates"): "ResourceClaimTemplate",
    ("", "pods"): "Pod",
}
REQUEST_FIELDS = {  # upstream's BuildRequestType
    "kind": "GroupVersionKind",
    "resource": "GroupVersionResource",
    "subResource": "str",
    "requestKind": "GroupVersionKind",
    "requestResource": "GroupVersionResource",
    "requestSubResource": "str",
    "name": "str",
    "namespace": "str",
    "operation": "str",
    "userInfo": "object",
    "dryRun": "bool",
    "options": "object",
}
HAND_MADE = {
    "AdmissionRequest": REQUEST_FIELDS,
    "GroupVersionKind": {"group": "str", "version": "str", "kind": "str"},
    "GroupVersionResource": {"group": "str", "version": "str", "resource": "str"},
}


class _Messages:
    """One proto file with a message per model reachable from the roots."""

    def __init__(self) -> None:
        self.file = descriptor_pb2.FileDescriptorProto(
            name="k8s_openapi_types.proto",
            package=PACKAGE,
            syntax="proto3",
            dependency=["google/protobuf/struct.proto", "google/protobuf/timestamp.proto"],
        )
        self.done: set[str] = set()

    def add(self, name: str) -> None:
        if name in self.done:
            return
        self.done.add(name)
        fields = HAND_MADE.get(name)
        if fields is None:
            model = getattr(k8s, name)
            fields = {model.attribute_map[a]: t for a, t in model.openapi_types.items()}
        message = self.file.message_type.add(name=name)
        for number, (wire, kind) in enumerate(sorted(fields.items()), start=1):
            self._field(message, wire, kind, number)

    def _field(self, message: Any, wire: str, kind: str, number: int) -> None:
        field = message.field.add(name=wire, number=number, json_name=wire)
        field.label = F.LABEL_OPTIONAL
        listed = re.fullmatch(r"List\[(.*)\]", kind)
        mapped = re.fullmatch(r"Dict\[str, (.*)\]", kind)
        nested = re.compile(r"(List|Dict)\[")
        if listed and not nested.match(listed.group(1)):
            field.label = F.LABEL_REPEATED
            self._type(field, listed.group(1))
        elif mapped and not nested.match(mapped.group(1)):
            entry = message.nested_type.add(name=wire[0].upper() + wire[1:] + "Entry")
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
            self._type(entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL), mapped[1])
            field.label = F.LABEL_REPEATED
            field.type = F.TYPE_MESSAGE
            field.type_name = f".{PACKAGE}.{message.name}.{entry.name}"
        elif listed or mapped:  # lists of lists and the like: dynamic, as upstream's DynType
            self._type(field, "object")
        else:
            self._type(field, kind)

    def _type(self, field: Any, kind: str) -> None:
        if kind in SCALARS:
            field.type = SCALARS[kind]
        elif kind == "datetime":
            field.type = F.TYPE_MESSAGE
            field.type_name = ".google.protobuf.Timestamp"
        elif kind == "object":
            field.type = F.TYPE_MESSAGE
            field.type_name = ".google.protobuf.Value"
        else:
            field.type = F.TYPE_MESSAGE
            field.type_name = f".{PACKAGE}.{kind}"
            self.add(kind)


def _pool(roots: list[str]) -> descriptor_pool.DescriptorPool:
    messages = _Messages()
    for root in roots:
        messages.add(root)
    pool = descriptor_pool.DescriptorPool()
    for module in (struct_pb2, timestamp_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        pool.Add(proto)
    ours = descriptor_pb2.FileDescriptorProto()
    values.POOL.FindFileByName("allot/kubernetes_cel_types.proto").CopyToProto(ours)
    pool.Add(ours)
    pool.Add(messages.file)
    return pool


def _env(pool: Any, variables: dict[str, Any]) -> Any:
    return new_env(variables, pool)


@dataclass(frozen=True)
class TypeWarning:
    """One expression that does not compile for one matched kind."""

    kind: str
    field: str
    error: str


def matched_kinds(policy: dict[str, Any]) -> list[str]:
    """The kinds upstream type-checks a policy against: its resource rules' resources,
    subresources skipped."""
    found = []
    for rule in policy["spec"]["matchConstraints"]["resourceRules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                if "/" not in resource and RESOURCES[(group, resource)] not in found:
                    found.append(RESOURCES[(group, resource)])
    return found


def type_check(policy: dict[str, Any]) -> list[TypeWarning]:
    """What a 1.36 API server would write into the policy's ``status.typeChecking``, and
    the type errors of its ``matchConditions`` (compiled with the same declarations: one
    that does not compile fails every request the policy matches)."""
    spec = policy["spec"]
    param_kind = spec.get("paramKind")
    groups = {kind: group for (group, kind) in KINDS}
    warnings = []
    for kind in matched_kinds(policy):
        roots = [KINDS[(groups[kind], kind)], "AdmissionRequest"]
        declared: dict[str, Any] = {}
        if param_kind:
            group = param_kind["apiVersion"].rpartition("/")[0]
            roots.append(KINDS[(group, param_kind["kind"])])
            declared["params"] = cel.Type(f"{PACKAGE}.{roots[-1]}")
        pool = _pool(roots)
        declared |= {
            "object": cel.Type(f"{PACKAGE}.{roots[0]}"),
            "oldObject": cel.Type(f"{PACKAGE}.{roots[0]}"),
            "request": cel.Type(f"{PACKAGE}.AdmissionRequest"),
        }
        conditions = _env(pool, declared)  # they come before the variables
        for index, condition in enumerate(spec.get("matchConditions") or []):
            try:
                conditions.compile(condition["expression"])
            except RuntimeError as err:
                field = f"spec.matchConditions[{index}].expression"
                warnings.append(TypeWarning(kind, field, str(err)))
        for index, variable in enumerate(spec.get("variables") or []):
            try:
                checked = _env(pool, declared).compile(variable["expression"])
            except RuntimeError as err:
                warnings.append(TypeWarning(kind, f"spec.variables[{index}].expression", str(err)))
                declared[f"variables.{variable['name']}"] = cel.Type.DYN
            else:
                declared[f"variables.{variable['name']}"] = checked.return_type()
        env = _env(pool, declared)
        for index, validation in enumerate(spec.get("validations") or []):
            for key in ("expression", "messageExpression"):
                if key not in validation:
                    continue
                try:
                    env.compile(validation[key])
                except RuntimeError as err:
                    field = f"spec.validations[{index}].{key}"
                    warnings.append(TypeWarning(kind, field, str(err)))
    return warnings


def compiles(kind: str, expression: str) -> str | None:
    """The checker's error for one expression with ``object`` of ``kind``, or None."""
    groups = {kind: group for (group, kind) in KINDS}
    model = KINDS[(groups[kind], kind)]
    env = _env(_pool([model]), {"object": cel.Type(f"{PACKAGE}.{model}")})
    try:
        env.compile(expression)
    except RuntimeError as err:
        return str(err)
    return None
