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

The protocol also hands uvicorn a :class:`CoalescingTransport`: uvicorn writes a
response's status line and headers, then its body, as separate writes, and over TLS each
becomes its own record and socket send. The writes of one loop turn are now joined and
sent once, at the end of that turn (the same bytes, in the same order).

allot upgrades no connection: ``kubectl exec``, ``attach``, ``port-forward`` and ``cp`` ask
for a WebSocket (then SPDY) upgrade of ``pods/<name>/exec``, and the application answers
the request as plain HTTP with the ``Status`` that says these subresources are not served
(:class:`allot.apiserver.errors.StreamingNotServed`). uvicorn would log two warnings per
such request (``Unsupported upgrade request``, ``No supported WebSocket library
detected``) that read like a broken installation; the protocol keeps quiet instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT = 32.0  # seconds, as kube-apiserver's ReadHeaderTimeout


class ReadDeadlineProtocol(H11Protocol):
    read_timeout = READ_TIMEOUT

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._read_deadline: asyncio.TimerHandle | None = None
        super().connection_made(CoalescingTransport(transport, asyncio.get_running_loop()))
        self._watch_reads()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_reads()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _unsupported_upgrade_warning(self) -> None:
        """An upgrade request is answered as plain HTTP by design (see the module's
        docstring), not a misconfiguration to warn about."""

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


class CoalescingTransport(asyncio.Transport):
    """A transport whose writes within one loop turn go out as one write at its end;
    closing sends what is held first, aborting drops it (as the transport's own buffer)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(bytes(data))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def _flush(self) -> None:
        held, self._held = self._held, []
        if held and not self._transport.is_closing():
            self._transport.write(b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(d) for d in self._held)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()
