"""What the tests' JSON-over-HTTP servers share: a threaded server on 127.0.0.1, a free port, keep-alive."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, as real servers do. Headers and body go out as two writes, so Nagle is off:
    with it, a kept-alive connection waits for the client's delayed ACK (~40 ms) between them."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def send_json(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first (a timeout under test)
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class LoopbackServer:
    """A threaded HTTP server on a free 127.0.0.1 port, running while the `with` block does."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing()
        self.httpd.shutdown()
        self.httpd.server_close()

    def closing(self) -> None:
        """Called before the server stops (release handlers that wait)."""
