"""A flaky object store for tests: a fault-injecting HTTP proxy in front of an S3 server (moto's,
on loopback).

:class:`FlakyProxy` forwards each HTTP request it receives to the server, except that a share of
them (``rate``), chosen by a seeded generator, meets a fault of ``kinds`` instead (:data:`FAULTS`):

* ``500``: an S3 ``InternalError`` answer, not forwarded;
* ``503``: an S3 ``SlowDown`` answer (the store's "reduce your request rate"), not forwarded;
* ``reset``: the connection closed without an answer (a TCP reset), not forwarded;
* ``stall``: forwarded (the server applies it), but its answer is held past the client's read
  timeout and then the connection is reset: a request that hangs, whose effect happened.

``down`` makes every request meet ``down``, a 503 ``ServiceUnavailable`` answer (a store that stays
down), until it is cleared; ``outage`` sets it at the first request it matches (that one refused
already). A forwarded answer whose client gave up before it came (a slow server) is noted ``late``:
the client sends that request again, as after a stall. The proxy notes every request (method, key,
what happened, and a digest of each upload that reached the server), so that a test can count the
uploads of each key and the faults it injected.

Used by ``tests/harness/test_flaky_store.py`` and by the chaos run's ``flaky-store`` kind
(``benchmarks/chaos_store.py``).
"""

from __future__ import annotations

import hashlib
import http.client
import random
import select
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

#: The kinds of fault the proxy injects.
FAULTS = ("500", "503", "reset", "stall")
_ERRORS = {
    "500": ("500 Internal Server Error", "InternalError",
            "We encountered an internal error. Please try again."),
    "503": ("503 Slow Down", "SlowDown", "Please reduce your request rate."),
    "down": ("503 Service Unavailable", "ServiceUnavailable", "Service is unable to handle request."),
}
#: Headers the proxy sets itself on what it forwards (hop-by-hop ones, and the length it recounts).
_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "proxy-connection"}


@dataclass
class Request:
    """One request as the proxy saw it: ``fate`` is ``ok`` (forwarded and answered) or a fault."""

    method: str
    key: str  # the path without the query, unquoted: /bucket/prefix/...
    fate: str  # ok, a fault of FAULTS, down, or late
    status: int | None = None  # the server's answer, when it was forwarded
    digest: str | None = None  # SHA-256 of an upload's body, when it was forwarded
    at: float = field(default_factory=time.monotonic)


@dataclass
class FlakyProxy:
    """The proxy (see the module's docstring) in front of ``upstream`` (``host:port``); started by
    :meth:`start`, which returns its ``http://`` endpoint."""

    upstream: str
    kinds: tuple[str, ...] = ()  # the faults injected (each faulted request draws one), or none
    rate: float = 0.2
    seed: int = 0
    stall_s: float = 2.0
    down: bool = False
    outage: Callable[[Request], bool] | None = None
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.lock = threading.Lock()
        self.server: socketserver.ThreadingTCPServer | None = None

    def start(self) -> str:
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy.serve(self.request)

        socketserver.ThreadingTCPServer.daemon_threads = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host, port = self.server.server_address
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def faults(self) -> list[Request]:
        """The requests that met a fault (``late`` is none: the server was slow)."""
        with self.lock:
            return [r for r in self.requests if r.fate not in ("ok", "late")]

    def uploads(self, key: str) -> list[Request]:
        """The PUTs of ``key`` that reached the server (answered, stalled or late)."""
        with self.lock:
            return [r for r in self.requests if r.method == "PUT" and r.key == key
                    and r.status is not None]

    def _fate(self, request: Request) -> str:
        with self.lock:
            if self.outage is not None and self.outage(request):
                self.down = True
            if self.down:
                return "down"
            if self.kinds and self.rng.random() < self.rate:
                return self.rng.choice(self.kinds)
            return "ok"

    def serve(self, client: socket.socket) -> None:
        """Answer the requests of one client connection (kept alive) until it closes."""
        stream = client.makefile("rb")
        try:
            while (request := _read_request(stream, client)) is not None:
                if not self._answer(client, *request):
                    return
        except OSError:  # the client went away
            return
        finally:
            stream.close()

    def _answer(self, client: socket.socket, method: str, target: str, headers: list[tuple[str, str]],
                body: bytes) -> bool:
        """One request's fate; whether the connection stays open."""
        note = Request(method, unquote(urlsplit(target).path), "ok")
        note.fate = fate = self._fate(note)
        with self.lock:
            self.requests.append(note)
        if fate in _ERRORS:
            status, code, message = _ERRORS[fate]
            text = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                    f"<Message>{message}</Message><RequestId>flaky</RequestId></Error>").encode()
            client.sendall(_response(f"HTTP/1.1 {status}", [("Content-Type", "application/xml")],
                                     b"" if method == "HEAD" else text, len(text)))
            return True
        if fate == "reset":
            _reset(client)
            return False
        status, answer = self._forward(method, target, headers, body)
        note.status = status
        if method == "PUT":
            note.digest = hashlib.sha256(body).hexdigest()
        if fate == "stall":  # the server applied it; the client hears nothing and gives up
            time.sleep(self.stall_s)
            _reset(client)
            return False
        if _closed(client):  # the client timed out meanwhile: it never hears this answer
            note.fate = "late"
            return False
        client.sendall(answer)
        return True

    def _forward(self, method: str, target: str, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[int, bytes]:
        """The server's answer to the request: its status and the bytes to send back."""
        connection = http.client.HTTPConnection(self.upstream, timeout=60)
        try:
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                if name.lower() not in _HOP and name.lower() != "content-length":
                    connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            reply = connection.getresponse()
            data = reply.read()
            kept = [(n, v) for n, v in reply.getheaders() if n.lower() not in _HOP]
            if method != "HEAD":  # a HEAD's length is the object's, not its (empty) body's
                kept = [(n, v) for n, v in kept if n.lower() != "content-length"]
            line = f"HTTP/1.1 {reply.status} {reply.reason}"
            return reply.status, _response(line, kept, data, None if method == "HEAD" else len(data))
        finally:
            connection.close()


def _read_request(stream, client: socket.socket) -> tuple[str, str, list[tuple[str, str]], bytes] | None:
    """The next request on a connection (method, target, headers, body), or None at its end."""
    line = stream.readline(65537)
    if not line.strip():
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = []
    while (line := stream.readline(65537)) not in (b"\r\n", b"\n", b""):
        name, value = line.decode("latin-1").split(":", 1)
        headers.append((name.strip(), value.strip()))
    fields = {name.lower(): value for name, value in headers}
    if fields.get("expect", "").lower() == "100-continue":  # the client waits for this to send the body
        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while (size := int(stream.readline().split(b";")[0], 16)) > 0:
            body += stream.read(size)
            stream.readline()
        while stream.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass
    else:
        body = stream.read(int(fields.get("content-length", "0")))
    return method, target, headers, body


def _response(line: str, headers: list[tuple[str, str]], body: bytes, length: int | None) -> bytes:
    head = [line, *(f"{name}: {value}" for name, value in headers)]
    if length is not None:
        head.append(f"Content-Length: {length}")
    head.append("Connection: keep-alive")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _closed(client: socket.socket) -> bool:
    """Whether the client has closed its end (a read would find the end of the stream)."""
    if not select.select([client], [], [], 0)[0]:
        return False
    try:
        return client.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _reset(client: socket.socket) -> None:
    """Close ``client`` with a TCP reset (linger 0): no answer, no orderly end."""
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
