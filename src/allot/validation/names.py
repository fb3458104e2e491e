"""Name and format checks of ``k8s.io/apimachinery/pkg/util/validation``, with their texts.

Each ``is_*`` function returns the list of messages Kubernetes would produce (empty when
the value is fine), so callers wrap them into field errors exactly as upstream does.
"""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = rf"{DNS1123_LABEL_FMT}(\.{DNS1123_LABEL_FMT})*"
C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = rf"({QUALIFIED_NAME_FMT})?"

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_DNS1123_LABEL = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_C_IDENTIFIER = re.compile(f"^{C_IDENTIFIER_FMT}$")
_QUALIFIED_NAME = re.compile(f"^{QUALIFIED_NAME_FMT}$")
_LABEL_VALUE = re.compile(f"^{LABEL_VALUE_FMT}$")


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    if examples:
        shown = ",  or ".join(f"'{e}'" for e in examples)
        message += f" (e.g. {shown}, regex used for validation is '{fmt}')"
    else:
        message += f" (regex used for validation is '{fmt}')"
    return message


_PERCENT_FMT = "[0-9]+%"
_PERCENT = re.compile(f"^{_PERCENT_FMT}$")


def is_valid_percent(value: str) -> list[str]:
    """``IsValidPercent``: digits and a trailing ``%``."""
    if _PERCENT.match(value):
        return []
    return [
        _regex_error(
            "a valid percent string must be a numeric string followed by an ending '%'",
            _PERCENT_FMT,
            "1%",
            "93%",
        )
    ]


def is_domain_prefixed_path(value: str) -> list[str]:
    """``IsDomainPrefixedPath``: ``acme.io/foo`` (a DNS subdomain, then a path); the
    domain's own errors are those of a subdomain."""
    domain, slash, path = value.partition("/")
    if not slash or not domain or not path:
        return ['must be a domain-prefixed path (such as "acme.io/foo")']
    return is_dns1123_subdomain(domain)


def is_valid_path_segment_name(value: str) -> list[str]:
    """``IsValidPathSegmentName``: the names RBAC objects may have (anything usable as
    one segment of a URL path)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in value]


_PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])*$")


def is_valid_port_num(value: int) -> list[str]:
    """``IsValidPortNum``: 1 to 65535."""
    return [] if 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(value: str) -> list[str]:
    """``IsValidPortName`` (an IANA service name): at most 15 characters, lower case
    letters, digits and single hyphens, at least one letter."""
    messages = []
    if len(value) > 15:
        messages.append("must be no more than 15 characters")
    if not _PORT_NAME.match(value):
        messages.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        messages.append("must not contain consecutive hyphens")
    if not re.search("[a-z]", value):
        messages.append("must contain at least one letter (a-z)")
    return messages


_WILDCARD_FMT = rf"\*\.{DNS1123_SUBDOMAIN_FMT}"
_WILDCARD = re.compile(f"^{_WILDCARD_FMT}$")


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """``IsWildcardDNS1123Subdomain``: ``*.example.com``."""
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _WILDCARD.match(value):
        errors.append(
            _regex_error(
                "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
                "subdomain, which must consist of lower case alphanumeric characters, '-' or "
                "'.' and end with an alphanumeric character",
                _WILDCARD_FMT,
                "*.example.com",
            )
        )
    return errors


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def is_dns1123_label(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL.match(value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                "'-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errors


def is_c_identifier(value: str) -> list[str]:
    if _C_IDENTIFIER.match(value):
        return []
    return [
        _regex_error(
            "a valid C identifier must start with alphabetic character or '_', followed by a "
            "string of alphanumeric characters or '_'",
            C_IDENTIFIER_FMT,
            "my_name",
            "MY_NAME",
            "MyName",
        )
    ]


def is_qualified_name(value: str) -> list[str]:
    """A label key or annotation key: ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errors: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errors = []
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            _regex_error(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character",
                QUALIFIED_NAME_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
            + " with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if name and not _QUALIFIED_NAME.match(name):
        errors.append(
            "name part "
            + _regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                "end with an alphanumeric character",
                QUALIFIED_NAME_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
        )
    return errors


def is_label_value(value: str) -> list[str]:
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.match(value):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def is_normalized_uuid(value: str) -> list[str]:
    if _UUID.match(value):
        return []
    return [
        "uid must be in RFC 4122 normalized form, "
        "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"
    ]


DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
"""The implicit extended-resource name of a DeviceClass is this prefix + its name."""
NATIVE_RESOURCE_NAMESPACE = "kubernetes.io/"
QUOTA_REQUESTS_PREFIX = "requests."
QUOTA_LIMITS_PREFIX = "limits."
QUOTA_COUNT_PREFIX = "count/"
"""``count/<resource>.<group>`` quota keys count objects (Kubernetes' object-count quota)."""
DEVICE_CLASS_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
"""A DRA ResourceQuota key ``<class>.deviceclass.resource.k8s.io/devices`` counts devices."""


def is_native_resource(name: str) -> bool:
    """``helper.IsNativeResource``: unprefixed, or in a ``*kubernetes.io/`` namespace."""
    return "/" not in name or NATIVE_RESOURCE_NAMESPACE in name


def is_extended_resource_name(name: str) -> bool:
    """``helper.IsExtendedResourceName``: not native, no ``requests.`` prefix, and a
    qualified name once ``requests.`` is put in front (its quota key)."""
    if is_native_resource(name) or name.startswith(QUOTA_REQUESTS_PREFIX):
        return False
    return not is_qualified_name(QUOTA_REQUESTS_PREFIX + name)


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource, or a DeviceClass's
    implicit name (``deviceclass.resource.kubernetes.io/<class>``). Such resources are
    charged by quota as ``requests.<name>`` and allocated by the scheduler through a claim."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


def is_device_quota_key(key: str) -> bool:
    """Whether a ResourceQuota key counts devices, from its name alone (no catalogue):
    ``<class>.deviceclass.resource.k8s.io/devices``, or a DRA extended resource name
    (:func:`is_dra_extended_resource_name`: ``nvidia.com/gpu``, a class's implicit
    ``deviceclass.resource.kubernetes.io/<class>``) bare or after ``requests.`` or
    ``limits.`` (``count/...`` keys count objects, not devices). The one definition:
    Tenant validation refuses these keys next to ``spec.sharing`` and the tenant
    controller leaves them out of a sharing tenant's quota."""
    if key.endswith(DEVICE_CLASS_QUOTA_SUFFIX):
        return True
    for prefix in (QUOTA_REQUESTS_PREFIX, QUOTA_LIMITS_PREFIX):
        if key.startswith(prefix):
            return is_dra_extended_resource_name(key.removeprefix(prefix))
    return not key.startswith(QUOTA_COUNT_PREFIX) and is_dra_extended_resource_name(key)
