"""The request corpus: what is sent, in which order, on which seed objects.

A corpus file (``corpus/*.yaml``) is one suite: ``setup`` (objects created before its
requests, in order, by the host's administrator) and ``requests``, each with these keys:

- ``name``; ``method``; ``path`` (below the kubeconfig's server URL); ``query`` (a map, or a
  list of pairs where a key repeats); ``headers``; ``contentType`` and ``accept`` (headers);
  ``as`` (``{user, groups}``: sent as ``Impersonate-User``/``Impersonate-Group``);
- the body: ``body`` (an object or list, sent as JSON), ``text`` (sent as is) or
  ``binary`` (``!!binary``);
- ``save``: ``{variable: dotted.path}`` read from the response body, then written
  ``{{variable}}`` in later paths, queries and bodies of the same suite;
- ``ignore``: dotted paths left out of both answers before comparing (``status`` of an
  object a controller changes at its own pace), ``*`` matching any key or list index;
- ``view``: compare only part of the answer (see :mod:`.compare`): ``discovery:<group>``,
  ``openapi:<Schema>,<Schema>``, ``events`` (a watch's event types and objects);
- ``pause``: seconds to wait before sending (a controller or a CRD that must settle).

:mod:`.scenarios` turns the scenario files of ``tests/scenarios`` into more suites of the
same shape, so that their cases stay written once. Called by :mod:`.run`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from allot.types import Obj

CORPUS = Path(__file__).parent / "corpus"
REQUEST_KEYS = {
    "name", "method", "path", "query", "headers", "contentType", "accept", "as", "body",
    "text", "binary", "save", "ignore", "view", "pause",
}  # fmt: skip


class CorpusError(Exception):
    """A corpus file that does not follow the format above."""


@dataclass(frozen=True)
class Request:
    """One request as sent to both servers."""

    id: str
    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    save: tuple[tuple[str, str], ...] = ()
    ignore: tuple[str, ...] = ()
    view: str = ""
    pause: float = 0.0

    @property
    def is_watch(self) -> bool:
        return ("watch", "true") in self.query or ("watch", "1") in self.query


@dataclass
class Suite:
    """Requests replayed in order on a server after ``setup`` was created there."""

    name: str
    requests: list[Request]
    setup: list[Obj] = field(default_factory=list)


def load_corpus(directory: Path = CORPUS) -> list[Suite]:
    """Every suite of ``directory``, by file name."""
    return [load_suite(path) for path in sorted(directory.glob("*.yaml"))]


def load_suite(path: Path) -> Suite:
    document = yaml.safe_load(path.read_text()) or {}
    unknown = set(document) - {"setup", "requests"}
    if unknown:
        raise CorpusError(f"{path.name}: unknown keys {sorted(unknown)}")
    suite = path.stem
    requests = [request_from(suite, raw) for raw in document.get("requests") or []]
    return Suite(suite, requests, list(document.get("setup") or []))


def request_from(suite: str, raw: dict[str, Any]) -> Request:
    """A :class:`Request` from a corpus entry (the keys in the module's docstring)."""
    unknown = set(raw) - REQUEST_KEYS
    if unknown:
        raise CorpusError(f"{suite}/{raw.get('name')}: unknown keys {sorted(unknown)}")
    headers = dict(raw.get("headers") or {})
    if "contentType" in raw:
        headers["Content-Type"] = raw["contentType"]
    if "accept" in raw:
        headers["Accept"] = raw["accept"]
    pairs = list(headers.items()) + impersonation(raw.get("as"))
    return Request(
        id=f"{suite}/{raw['name']}",
        method=raw["method"],
        path=raw["path"],
        query=query_pairs(raw.get("query")),
        headers=tuple(pairs),
        body=body_of(raw),
        save=tuple((raw.get("save") or {}).items()),
        ignore=tuple(raw.get("ignore") or ()),
        view=str(raw.get("view") or ""),
        pause=float(raw.get("pause") or 0.0),
    )


def query_pairs(query: Any) -> tuple[tuple[str, str], ...]:
    if not query:
        return ()
    items = query.items() if isinstance(query, dict) else query
    return tuple((str(key), str(value)) for key, value in items)


def impersonation(who: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The headers by which the host's administrator acts as ``{user, groups}``."""
    if not who:
        return []
    pairs = [("Impersonate-User", str(who["user"]))]
    pairs += [("Impersonate-Group", str(group)) for group in who.get("groups") or ()]
    return pairs


def body_of(raw: dict[str, Any]) -> bytes | None:
    if "binary" in raw:
        return bytes(raw["binary"])
    if "text" in raw:
        return str(raw["text"]).encode()
    if "body" in raw:
        return json.dumps(raw["body"]).encode()
    return None
