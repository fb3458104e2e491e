"""Sending the corpus to one API server over HTTPS, as the host's administrator.

:class:`Target` reads a kubeconfig (the server URL, its CA, the bearer token: what both
engines write as ``kubeconfigs/host.yaml``), creates a suite's ``setup`` objects with
allot's generic client and sends its requests with httpx, recording each answer as an
:class:`Answer`: the status code, the ``Warning`` headers and the decoded body (a watch's
newline-delimited events become a list). Nothing is compared here (:mod:`.compare`).
Called by :mod:`.run`.
"""

from __future__ import annotations

import json
import re
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from allot.kube.client import Client
from allot.kube.errors import KubeError
from tests.conformance.corpus import Request, Suite

USER_AGENT = "allot-conformance/1.0"
STREAM_SECONDS = 5.0  # silence after which an answer still streaming is cut
STILL_OPEN = '"(the stream was still open)"'
VARIABLE = re.compile(r"\{\{(\w+)\}\}")


@dataclass
class Answer:
    code: int
    body: Any
    warnings: list[str]
    content_type: str


class Target:
    """One API server: the raw HTTPS session and allot's client for the setup."""

    def __init__(self, name: str, kubeconfig: Path) -> None:
        self.name = name
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        token = config["users"][0]["user"]["token"]
        ca = Path(cluster["certificate-authority"])
        if not ca.is_absolute():
            ca = kubeconfig.parent / ca
        self.http = httpx.Client(
            base_url=cluster["server"],
            verify=ssl.create_default_context(cafile=str(ca)),
            headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT},
            timeout=httpx.Timeout(60, read=STREAM_SECONDS),
        )
        self.client = Client.from_kubeconfig(kubeconfig)
        self.setup_errors: list[str] = []

    def close(self) -> None:
        self.http.close()
        self.client.close()

    def replay(self, suite: Suite) -> dict[str, Answer]:
        """Create ``suite.setup``, then send its requests in order."""
        for obj in suite.setup:
            try:
                self.client.create(obj)
            except KubeError as err:  # reported: the requests that need it will differ
                name = (obj.get("metadata") or {}).get("name")
                self.setup_errors.append(f"{suite.name}: {obj.get('kind')} {name}: {err}")
        variables: dict[str, str] = {}
        answers: dict[str, Answer] = {}
        for request in suite.requests:
            if request.pause:
                time.sleep(request.pause)
            answer = self.send(request, variables)
            answers[request.id] = answer
            for variable, path in request.save:
                variables[variable] = str(dotted(answer.body, path))
        return answers

    def send(self, request: Request, variables: dict[str, str]) -> Answer:
        def fill(text: str) -> str:
            return VARIABLE.sub(lambda match: variables.get(match[1], match[0]), text)

        body = request.body
        if body is not None and b"{{" in body:
            body = fill(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        query = "&".join(f"{httpx.QueryParams({key: fill(value)})}" for key, value in request.query)
        url = fill(request.path) + (f"?{query}" if query else "")
        chunks: list[bytes] = []
        cut = False
        with self.http.stream(
            request.method, url, content=body, headers=list(request.headers)
        ) as response:
            try:
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
            except httpx.ReadTimeout:  # a watch nobody asked to end: what came so far
                chunks.append(b"\n" + STILL_OPEN.encode())
                cut = True
        return Answer(
            code=response.status_code,
            body=decode(b"".join(chunks), request.is_watch or cut),
            warnings=response.headers.get_list("warning"),
            content_type=response.headers.get("content-type", ""),
        )


def decode(content: bytes, watch: bool) -> Any:
    """JSON, a watch's events (one JSON document a line), else the text."""
    text = content.decode("utf-8", "replace")
    try:
        if watch and text.strip():
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return text


def dotted(document: Any, path: str) -> Any:
    """``a.b.0.c`` in a decoded JSON document (None where it is absent)."""
    for key in path.split("."):
        if isinstance(document, dict):
            document = document.get(key)
        elif isinstance(document, list) and key.isdigit() and int(key) < len(document):
            document = document[int(key)]
        else:
            return None
    return document
