"""Name translation between tenants and the host: injective, reversible, bounded."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.tenancy import names
from allot.validation.names import is_dns1123_label, is_dns1123_subdomain

LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
SUBDOMAIN = st.lists(LABEL, min_size=1, max_size=4).map(".".join)


@given(st.tuples(SUBDOMAIN, LABEL), st.tuples(SUBDOMAIN, LABEL))
def test_translation_is_injective(first: tuple[str, str], second: tuple[str, str]) -> None:
    if first != second:
        assert names.host_name(*first) != names.host_name(*second)


@given(SUBDOMAIN, LABEL)
def test_translation_is_reversible_and_valid(name: str, namespace: str) -> None:
    translated = names.host_name(name, namespace)
    assert names.tenant_name(translated) == (name, namespace)
    assert not is_dns1123_subdomain(translated)  # no errors: a valid object name


def test_too_long_names_are_refused() -> None:
    with pytest.raises(names.NameTooLong, match="at most 253"):
        names.host_name("a" * 250, "default")
    assert len(names.host_name("a" * 245, "default")) == 253


def test_host_namespace_round_trip() -> None:
    assert names.host_namespace("legal-ai") == "tenant-legal-ai"
    assert names.tenant_of_namespace("tenant-legal-ai") == "legal-ai"
    assert names.tenant_of_namespace("default") is None
    assert not is_dns1123_label(names.host_namespace("a" * 56))


def test_reserved_keys_are_found() -> None:
    metadata = {
        "labels": {"allot.dev/tenant": "x", "team": "a"},
        "annotations": {"allot.dev/y": ""},
    }
    assert names.reserved_keys(metadata) == [
        ("labels", "allot.dev/tenant"),
        ("annotations", "allot.dev/y"),
    ]
