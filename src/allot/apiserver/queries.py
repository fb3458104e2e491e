"""Query parameters checked before a request is served, as the kube-apiserver checks them.

A malformed parameter is the client's mistake: it gets a 4xx ``Status`` naming the
parameter, never a 500 from deep inside a handler. Numbers and booleans that do not parse
are 400 BadRequest (upstream's query-parameter decoding); values outside an enumeration
are 422 Invalid against the options kind of the verb, with upstream's text, e.g.
``CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]:
supported values: "All"``. ``app`` calls ``check`` once per resource request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.registry.bodies import go_json_type, is_count, is_integer
from allot.registry.errors import BadRequest, InvalidOptions

OPTIONS_KIND = {
    "GET": "ListOptions",
    "POST": "CreateOptions",
    "PUT": "UpdateOptions",
    "PATCH": "PatchOptions",
    "DELETE": "DeleteOptions",
}
FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")
RESOURCE_VERSION_MATCH = ("Exact", "NotOlderThan", "")
PROPAGATION = ("Foreground", "Background", "Orphan", "nil")
INTEGERS = ("limit", "timeoutSeconds", "tailLines", "gracePeriodSeconds", "limitBytes")
BOOLEANS = (
    "watch",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "force",
    "follow",
    "previous",
    "timestamps",
    "pretty",
    "orphanDependents",
)
APPLY_PATCH = "application/apply-patch+yaml"
MATCH = "resourceVersionMatch"


def check(method: str, query: Mapping[str, str], dry_run: Sequence[str], content_type: str) -> None:
    """Raise ``BadRequest`` or ``Unprocessable`` for the first malformed parameter."""
    for name in INTEGERS:
        value = query.get(name)
        if value is not None and not is_integer(value):
            raise BadRequest(f'{name}: Invalid value: "{value}": must be an integer')
    for name in BOOLEANS:
        value = query.get(name)
        if value is not None and value.lower() not in ("", "true", "false", "1", "0"):
            raise BadRequest(f'{name}: Invalid value: "{value}": must be true or false')
    version = query.get("resourceVersion")
    if version and not is_count(version):
        raise BadRequest(
            f'resourceVersion: Invalid value: "{version}": must be empty or a decimal '
            "resourceVersion returned by this server"
        )
    kind = OPTIONS_KIND.get(method, "ListOptions")
    if method == "GET":
        errors = list_options(query)
        if errors:
            raise InvalidOptions("ListOptions", errors)
        return
    bad_dry_run = [value for value in dry_run if value != "All"]
    if bad_dry_run:
        raise _invalid(kind, "dryRun", _json_list(dry_run), ("All",))
    validation = query.get("fieldValidation")
    if validation and validation not in FIELD_VALIDATION:
        raise _invalid(kind, "fieldValidation", f'"{validation}"', FIELD_VALIDATION)
    if method == "PATCH" and content_type == APPLY_PATCH and not query.get("fieldManager"):
        field = (
            "FieldValueRequired",
            "fieldManager",
            "Required value: is required for apply patch",
        )
        raise InvalidOptions("PatchOptions", [field])


def list_options(query: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """Upstream's ``ValidateListOptions``: ``resourceVersionMatch`` and
    ``sendInitialEvents`` as a list and as a watch allow them (watch-list included)."""
    match = query.get("resourceVersionMatch") or ""
    initial = "sendInitialEvents" in query
    errors: list[tuple[str, str, str]] = []

    def forbid(field: str, text: str) -> None:
        errors.append(("FieldValueForbidden", field, f"Forbidden: {text}"))

    def unsupported(supported: Sequence[str]) -> None:
        values = ", ".join(f'"{v}"' for v in supported)
        text = f'Unsupported value: "{match}": supported values: {values}'
        errors.append(("FieldValueNotSupported", "resourceVersionMatch", text))

    if (query.get("watch") or "").lower() not in ("", "false", "0"):
        if initial and match != "NotOlderThan":
            forbid(MATCH, f"sendInitialEvents requires setting {MATCH} to NotOlderThan")
        if match and not initial:
            forbid(MATCH, f"{MATCH} is forbidden for watch unless sendInitialEvents is provided")
        if match and match != "NotOlderThan":
            unsupported(("NotOlderThan",))
        if match and query.get("continue"):
            forbid(MATCH, f"{MATCH} is forbidden when continue is provided")
        return errors
    if match:
        if not query.get("resourceVersion"):
            forbid(MATCH, f"{MATCH} is forbidden unless resourceVersion is provided")
        if query.get("continue"):
            forbid(MATCH, f"{MATCH} is forbidden when continue is provided")
        if match not in RESOURCE_VERSION_MATCH:
            unsupported(RESOURCE_VERSION_MATCH)
        if match == "Exact" and query.get("resourceVersion") == "0":
            forbid(MATCH, f'{MATCH} "exact" is forbidden for resourceVersion "0"')
    if initial:
        forbid("sendInitialEvents", "sendInitialEvents is forbidden for list")
    return errors


def _json_list(values: Sequence[str]) -> str:
    return "[" + ",".join(f'"{value}"' for value in values) + "]"


def delete_options(body: dict[str, object], query: Mapping[str, str]) -> dict[str, object]:
    """A DELETE's options: its body, or without one its query parameters
    (``gracePeriodSeconds``, ``orphanDependents``, ``propagationPolicy``), which is how the
    official Python client sends them (``propagation_policy="Orphan"``), as upstream's
    delete handler decodes them. ``check`` has already parsed the numbers and booleans."""
    if body:
        return body
    options: dict[str, object] = {}
    grace = query.get("gracePeriodSeconds")
    if grace is not None:
        options["gracePeriodSeconds"] = int(grace)
    orphan = query.get("orphanDependents")
    if orphan is not None:
        options["orphanDependents"] = orphan.lower() in ("", "true", "1")
    policy = query.get("propagationPolicy")
    if policy is not None:
        options["propagationPolicy"] = policy
    return options


def check_delete_options(options: Mapping[str, object]) -> None:
    """The fields of a DeleteOptions body: types as Go decodes them, then the policy."""
    for name, expected, go_type in (
        ("gracePeriodSeconds", int, "int64"),
        ("orphanDependents", bool, "bool"),
        ("propagationPolicy", str, "v1.DeletionPropagation"),
        ("preconditions", dict, "v1.Preconditions"),
    ):
        value = options.get(name)
        if value is None:
            continue
        wrong = isinstance(value, bool) if expected is int else False
        if wrong or not isinstance(value, expected):
            raise BadRequest(
                f"json: cannot unmarshal {go_json_type(value)} into Go struct field "
                f"DeleteOptions.{name} of type {go_type}"
            )
    dry_run = options.get("dryRun")
    if dry_run is not None:
        if not isinstance(dry_run, list) or not all(isinstance(v, str) for v in dry_run):
            raise BadRequest(
                f"json: cannot unmarshal {go_json_type(dry_run)} into Go struct field "
                "DeleteOptions.dryRun of type []string"
            )
        if any(value != "All" for value in dry_run):
            raise _invalid("DeleteOptions", "dryRun", _json_list(dry_run), ("All",))
    policy = options.get("propagationPolicy")
    if policy is not None and options.get("orphanDependents") is not None:
        text = (
            f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be '
            "both set"
        )
        raise InvalidOptions("DeleteOptions", [("FieldValueInvalid", "propagationPolicy", text)])
    if policy is not None and policy not in PROPAGATION:
        raise _invalid("DeleteOptions", "propagationPolicy", f'"{policy}"', PROPAGATION)


def _invalid(kind: str, field: str, shown: str, supported: Sequence[str]) -> InvalidOptions:
    values = ", ".join(f'"{v}"' for v in supported)
    text = f"Unsupported value: {shown}: supported values: {values}"
    return InvalidOptions(kind, [("FieldValueNotSupported", field, text)])
