"""Read deadlines on client connections: a half-open connection cannot hold the server.

uvicorn's HTTP/1.1 protocol closes idle keep-alive connections but waits for ever on a
client that opens a connection and sends half a request's headers, or stops in the middle
of its body. kube-apiserver gives a client 32 seconds to send a request's headers
(``ReadHeaderTimeout``); :class:`ReadDeadlineProtocol` does the same for headers and for
each pause in a body: when a client has sent nothing for :data:`READ_TIMEOUT` seconds
while the server waits for it, the connection is closed. A connection whose request is
complete (a watch streaming to the client, a slow handler) is never closed by it, nor one
whose reading the server paused because the handler has not consumed the body yet. Used
by ``allot.apiserver.server`` as uvicorn's protocol class.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT = 32.0  # seconds, as kube-apiserver's ReadHeaderTimeout


class ReadDeadlineProtocol(H11Protocol):
    read_timeout = READ_TIMEOUT

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._read_deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._watch_reads()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_reads()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _waiting_for_client(self) -> bool:
        """Headers not complete yet, or a body still arriving that the server reads."""
        state = self.conn.their_state
        return state is h11.IDLE or (state is h11.SEND_BODY and not self.flow.read_paused)

    def _watch_reads(self) -> None:
        self._stop_watching()
        if self._waiting_for_client() and not self.transport.is_closing():
            self._read_deadline = self.loop.call_later(self.read_timeout, self._deadline_passed)

    def _stop_watching(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _deadline_passed(self) -> None:
        self._read_deadline = None
        if self._waiting_for_client():
            self.transport.close()


def with_read_timeout(seconds: float) -> type[ReadDeadlineProtocol]:
    """The protocol class with its own deadline (tests use short ones)."""
    attributes: dict[str, Any] = {"read_timeout": seconds}
    return type("ReadDeadlineProtocol", (ReadDeadlineProtocol,), attributes)
