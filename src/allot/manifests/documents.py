"""Reading manifest files: multi-document YAML or JSON, from paths or standard input.

Mirrors what ``kubectl apply -f`` accepts: YAML streams separated by ``---``, a JSON object,
or a ``List`` whose ``items`` are objects. Problems with the bytes themselves (not UTF-8,
malformed YAML, duplicate keys, a document that is not a mapping) become
:class:`ManifestError` with the file and document named, never a traceback. Used by
``allot validate`` and every command that takes ``-f``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allot.api.errors import yaml_error_text

if TYPE_CHECKING:
    import yaml

MAX_FILE_BYTES = 1024 * 1024 * 1024
"""What one input may hold: a 1,000-node fleet of 8 GPUs with DynamicMIG is 340 MB of
ResourceSlices in YAML, 950 MB as ``kubectl get -o json`` prints it (208 devices a node)."""
MACHINE_WRITTEN_BYTES = 8 * 1024 * 1024
"""Past this a YAML text is read by yaml-rs first (40 times PyYAML's speed on a fleet dump):
such files are written by programs (kubectl, a fleet generator), which quote the strings
YAML 1.1 and 1.2 read differently (``yes``, ``on``, ``010``)."""
STDIN_NAME = "STDIN"


class ManifestError(Exception):
    """A file or document that cannot be read as manifests; the message says where."""


@dataclass(frozen=True)
class Document:
    source: str
    index: int  # 0-based position in the file
    content: Any

    @property
    def where(self) -> str:
        return f'"{self.source}" (document {self.index + 1})'


def _construct_mapping(
    loader: yaml.SafeLoader | yaml.CSafeLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    """A mapping, or a ``duplicate field`` error like Kubernetes' strict decoder."""
    import yaml

    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f'duplicate field "{key}"', key_node.start_mark
            )
        seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


@cache
def _strict_loaders() -> tuple[type[yaml.CSafeLoader] | None, type[yaml.SafeLoader]]:
    """The strict loaders: libyaml's (None when PyYAML was built without it) and PyYAML's
    own. Both construct with the same Python constructor, so they read the same values;
    only their error texts differ, and those come from PyYAML's (:func:`parse_yaml`).
    YAML is imported here, on the first YAML document: a JSON scenario never loads it."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    if not hasattr(yaml, "CSafeLoader"):
        return None, StrictLoader

    class StrictCLoader(yaml.CSafeLoader):
        pass

    StrictCLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
    )
    return StrictCLoader, StrictLoader


def read_sources(paths: list[str]) -> list[Document]:
    """Read every path (``-`` is standard input) into documents, in order."""
    documents: list[Document] = []
    for path in paths:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
            documents += parse(raw, STDIN_NAME)
        else:
            documents += parse(_read_file(path), path)
    return documents


def read_yaml_file(path: str) -> list[Any]:
    """The YAML documents of one file that is not a manifest (a vCluster values file),
    read with the same limits and error texts as manifests."""
    return parse_yaml(_text(_read_file(path), path), path)


def _read_file(path: str) -> bytes:
    file_path = Path(path)
    if file_path.is_dir():
        raise ManifestError(f'error reading "{path}": is a directory (name the files)')
    try:
        with file_path.open("rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ManifestError(f'the path "{path}" does not exist') from None
    except OSError as err:
        raise ManifestError(f'error reading "{path}": {err.strerror}') from None


def _text(raw: bytes, source: str) -> str:
    if len(raw) > MAX_FILE_BYTES:
        raise ManifestError(
            f'error reading "{source}": larger than {MAX_FILE_BYTES} bytes (the most '
            "allot reads from one input: about 1,000 nodes of 8 DynamicMIG GPUs as kubectl "
            "prints their ResourceSlices); split the objects over several files, or describe "
            "a simulated fleet in a fleet file (allot up --fleet)"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ManifestError(
            f'error parsing "{source}": invalid UTF-8 at byte {err.start}'
        ) from None


def parse(raw: bytes, source: str) -> list[Document]:
    """Split ``raw`` into documents; empty documents are skipped as kubectl does."""
    text = _text(raw, source)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        return _expand(_parse_json(text, source), source)
    if len(text) > MACHINE_WRITTEN_BYTES:
        return _expand(parse_machine_yaml(text, source), source)
    return _expand(parse_yaml(text, source), source)


def parse_machine_yaml(text: str, source: str) -> list[Any]:
    """The documents of a YAML text a program wrote (a dump, a generated fleet): yaml-rs,
    with :func:`parse_yaml` as the fallback and the judge of errors. Timestamps stay
    strings, as the models expect."""
    import yaml_rs

    try:
        parsed = yaml_rs.loads(text, parse_datetime=False)
    except Exception:
        return parse_yaml(text, source)  # raises the error text every command gives
    if isinstance(parsed, list) and all(d is None or isinstance(d, dict) for d in parsed):
        return parsed  # several documents
    return [parsed]


def _parse_json(text: str, source: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as err:
        raise ManifestError(
            f'error parsing "{source}": invalid JSON at line {err.lineno} '
            f"column {err.colno}: {err.msg}"
        ) from None


def parse_yaml(text: str, source: str) -> list[Any]:
    """Every YAML document of ``text`` (None for empty ones); a malformed one raises
    :class:`ManifestError` in kubectl's words, the same for every command."""
    import yaml

    fast, exact = _strict_loaders()
    if fast is not None:
        try:
            return list(yaml.load_all(text, Loader=fast))
        except yaml.YAMLError:
            pass  # read again by PyYAML's parser, whose error text allot has always given
    try:
        return list(yaml.load_all(text, Loader=exact))
    except yaml.MarkedYAMLError as err:
        raise ManifestError(f'error parsing "{source}": {yaml_error_text(err)}') from None
    except yaml.YAMLError as err:
        raise ManifestError(f'error parsing "{source}": {err}') from None


def _expand(contents: list[Any], source: str) -> list[Document]:
    documents: list[Document] = []
    for index, content in enumerate(contents):
        if content is None:
            continue
        if not isinstance(content, dict):
            raise ManifestError(
                f'error parsing "{source}" (document {index + 1}): expected '
                f"an object with apiVersion and kind, got "
                f"{type(content).__name__}"
            )
        if content.get("kind") == "List" and isinstance(content.get("items"), list):
            documents += [Document(source, index, item) for item in content["items"]]
        else:
            documents.append(Document(source, index, content))
    return documents
