"""An HTTP relay in front of one real node, for tests that need a lost answer: it forwards
every request to the node, and while `swallow` names a path it forwards that path's
requests but answers nothing (it closes the client's connection instead), as a node that
applied a write and then died, or a network that dropped the answer, would. `swallow_if`,
when set, decides per request from its path and body."""
from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional, Set


class Relay:
    def __init__(self, target: str) -> None:
        parsed = urllib.parse.urlsplit(target)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 80
        self.swallow: Set[str] = set()
        self.swallow_if: Optional[Callable[[str, bytes], bool]] = None
        self.swallowed = 0
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _relay(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn = http.client.HTTPConnection(relay._host, relay._port, timeout=70)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    res = conn.getresponse()
                    data = res.read()
                except OSError:
                    self.close_connection = True
                    return
                finally:
                    conn.close()
                path = urllib.parse.urlsplit(self.path).path
                if path in relay.swallow or (relay.swallow_if is not None and relay.swallow_if(path, body or b"")):
                    relay.swallowed += 1
                    self.close_connection = True  # the request was applied; its answer is lost
                    return
                self.send_response(res.status)
                for k, v in res.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "keep-alive"):
                        self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = _relay
            do_POST = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread: Optional[threading.Thread] = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
