"""Manifest YAML is read by libyaml when PyYAML has it, with PyYAML's own error texts.

:mod:`allot.manifests.documents` parses with a strict ``CSafeLoader`` first (start-up and
large files, issue 15) and, on any error, parses again with the pure-Python strict loader,
so values and messages are the ones allot gave before. These tests hold both halves: every
YAML file of the repository reads to the same values through both loaders, and a broken
file is reported in PyYAML's words with its line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from allot.api.errors import yaml_error_text
from allot.manifests.documents import ManifestError, _strict_loaders, parse
from tests.conftest import REPO

YAML_FILES = sorted(
    p
    for folder in ("examples", "tests/scenarios", "tests/golden")
    for p in (REPO / folder).rglob("*.y*ml")
)
BROKEN = [
    "kind: [unclosed\n",
    "a: b\n c: d\n",
    "key: value\n\tindented: tab\n",
    "a: 'unterminated\n",
    "apiVersion: v1\nkind: Namespace\nkind: Pod\n",
]


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_libyaml_and_pyyaml_read_the_same_values(path: Path) -> None:
    fast, exact = _strict_loaders()
    if fast is None:
        pytest.skip("PyYAML built without libyaml")
    text = path.read_text(encoding="utf-8")
    assert list(yaml.load_all(text, Loader=fast)) == list(yaml.load_all(text, Loader=exact))


@pytest.mark.parametrize("text", BROKEN)
def test_a_broken_file_gets_pyyamls_message(text: str) -> None:
    _, exact = _strict_loaders()
    with pytest.raises(yaml.YAMLError) as expected:
        list(yaml.load_all(text, Loader=exact))
    with pytest.raises(ManifestError) as got:
        parse(text.encode(), "f.yaml")
    assert str(got.value) == f'error parsing "f.yaml": {yaml_error_text(expected.value)}'
