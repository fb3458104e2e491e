"""ServiceAccount tokens: issued by the TokenRequest subresource, checked on every request.

``kubectl create token <sa>`` posts a TokenRequest to
``serviceaccounts/<name>/token``; the token it gets authenticates as
``system:serviceaccount:<ns>:<name>`` in that cluster only, until it expires
(``expirationSeconds``, default one hour, at least ten minutes) or the account is deleted
(the token is bound to the account's uid, as upstream's JWTs are). Tokens are random;
only their SHA-256 is kept, in ``serviceaccount-tokens.json`` (mode 0600) beside
``tokens.json``, so the file does not hold usable credentials; expired entries are dropped
whenever a token is issued. Built by the :class:`~allot.registry.clusters.Registry`; used
by the API server.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from allot.types import Clock

DEFAULT_SECONDS = 3600
MIN_SECONDS = 600
MAX_SECONDS = 1 << 32


@dataclass(frozen=True)
class TokenRecord:
    cluster: str
    namespace: str
    name: str
    uid: str
    expires: str  # RFC 3339


class ServiceAccountTokens:
    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self._records: dict[str, TokenRecord] = {}
        if path.exists():
            self._records = {
                digest: TokenRecord(**record)
                for digest, record in json.loads(path.read_text()).items()
            }

    def issue(
        self, cluster: str, namespace: str, name: str, uid: str, seconds: int
    ) -> tuple[str, dt.datetime]:
        """A new token for the account and when it expires (whole seconds, UTC)."""
        now = self.clock().replace(microsecond=0)
        expires = now + dt.timedelta(seconds=seconds)
        token = secrets.token_urlsafe(32)
        self._records = {d: r for d, r in self._records.items() if _parse(r.expires) > now}
        self._records[_digest(token)] = TokenRecord(
            cluster, namespace, name, uid, expires.isoformat().replace("+00:00", "Z")
        )
        self._save()
        return token, expires

    def lookup(self, token: str) -> TokenRecord | None:
        """The unexpired token's record, else None."""
        record = self._records.get(_digest(token))
        if record is None or _parse(record.expires) <= self.clock():
            return None
        return record

    def forget_cluster(self, cluster: str) -> None:
        kept = {d: r for d, r in self._records.items() if r.cluster != cluster}
        if len(kept) != len(self._records):
            self._records = kept
            self._save()

    def _save(self) -> None:
        data = json.dumps({d: asdict(r) for d, r in self._records.items()}, indent=2).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
