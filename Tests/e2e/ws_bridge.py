"""A test-only stand-in for the broker's WebSocket listener: serves a directory over HTTP and bridges
`/mqtt` (RFC 6455, subprotocol `mqtt`) to a broker's plain TCP port, byte for byte.

Why: the browser chat (web/) must be testable before the broker speaks WebSockets itself, and mosquitto 2.0.11
cannot open a WebSocket listener on these machines (docs: shared toolchain notes). Standard library only, one
thread per connection; `stop()` closes the server and every bridged socket, so a test leaves nothing behind.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import socket
import struct
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_FRAME = 1 << 20  # far above any chat envelope; a bigger frame is a bug or an attack: close


class WebSocketBridge:
    """`WebSocketBridge(web_dir, broker_port).start()`; then http://127.0.0.1:{port}/ and ws://.../mqtt."""

    def __init__(self, web_dir: Path, broker_port: int, host: str = "127.0.0.1"):
        self.web_dir = Path(web_dir).resolve()
        self.broker_port = broker_port
        self.host = host
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        bridge = self

        class Handler(_Handler):
            owner = bridge

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="ws-bridge", daemon=True)

    def start(self) -> "WebSocketBridge":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            sockets = list(self._sockets)
        for s in sockets:
            _close(s)
        self._thread.join(5)

    def drop_connections(self) -> None:
        """Closes every bridged connection (a network failure, as the page sees it); the server keeps running."""
        with self._lock:
            sockets = list(self._sockets)
        for s in sockets:
            _close(s)

    def _track(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.update(sockets)

    def _untrack(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.difference_update(sockets)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


class _Handler(BaseHTTPRequestHandler):
    owner: WebSocketBridge
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # quiet: pytest shows the test's own output
        pass

    def do_GET(self):
        path = unquote(urlsplit(self.path).path)
        if path == "/mqtt" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self._bridge()
        target = (self.owner.web_dir / path.lstrip("/")).resolve()
        if target.is_dir():
            target = target / "index.html"
        if self.owner.web_dir not in target.parents or not target.is_file():
            return self._reply(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix == ".js":
            kind = "text/javascript"  # module scripts need a JavaScript MIME type
        self._reply(HTTPStatus.OK, target.read_bytes(), kind)

    def _reply(self, status, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _bridge(self) -> None:
        key = self.headers.get("Sec-WebSocket-Key", "")
        offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        if not key or "mqtt" not in offered:
            return self._reply(HTTPStatus.BAD_REQUEST, b"websocket subprotocol mqtt required\n", "text/plain")
        try:
            upstream = socket.create_connection(("127.0.0.1", self.owner.broker_port), timeout=5)
        except OSError:
            return self._reply(HTTPStatus.BAD_GATEWAY, b"broker unreachable\n", "text/plain")
        upstream.settimeout(None)
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(HTTPStatus.SWITCHING_PROTOCOLS)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", "mqtt")
        self.end_headers()
        self.wfile.flush()
        client = self.connection
        self.owner._track(client, upstream)
        send_lock = threading.Lock()
        pump = threading.Thread(target=_tcp_to_ws, args=(upstream, client, send_lock), daemon=True)
        pump.start()
        try:
            _ws_to_tcp(self.rfile, client, upstream, send_lock)
        finally:
            _close(upstream)
            _close(client)
            pump.join(5)
            self.owner._untrack(client, upstream)
            self.close_connection = True


def _frame(opcode: int, payload: bytes) -> bytes:
    """A server frame (never masked), FIN set."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return header + payload


def _read_exact(rfile, n: int) -> bytes:
    data = rfile.read(n)
    if data is None or len(data) < n:
        raise EOFError
    return data


def _ws_to_tcp(rfile, client: socket.socket, upstream: socket.socket, send_lock: threading.Lock) -> None:
    """Client frames (masked, as RFC 6455 requires) -> broker bytes; answers pings, ends on close or EOF."""
    try:
        while True:
            b0, b1 = _read_exact(rfile, 2)
            opcode, masked, n = b0 & 0x0F, b1 & 0x80, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", _read_exact(rfile, 2))[0]
            elif n == 127:
                n = struct.unpack("!Q", _read_exact(rfile, 8))[0]
            if not masked or n > MAX_FRAME:
                return
            mask = _read_exact(rfile, 4)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(_read_exact(rfile, n)))
            if opcode in (0x0, 0x2):  # continuation, binary: MQTT bytes
                upstream.sendall(data)
            elif opcode == 0x9:  # ping
                with send_lock:
                    client.sendall(_frame(0xA, data))
            elif opcode == 0x8:  # close: echo it, then end
                with send_lock:
                    client.sendall(_frame(0x8, data[:2]))
                return
            elif opcode == 0x1:  # text frames are not MQTT
                return
    except (EOFError, OSError, ValueError):
        return


def _tcp_to_ws(upstream: socket.socket, client: socket.socket, send_lock: threading.Lock) -> None:
    """Broker bytes -> binary frames; when the broker closes, the WebSocket is closed too."""
    try:
        while True:
            data = upstream.recv(65536)
            if not data:
                break
            with send_lock:
                client.sendall(_frame(0x2, data))
        with send_lock:
            client.sendall(_frame(0x8, struct.pack("!H", 1000)))
    except OSError:
        pass
    finally:
        _close(client)
