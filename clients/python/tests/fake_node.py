"""A stand-in node for tests that need answers a real cluster would not give: another
cluster's id, a token that went backwards, the value encoding of a newer node. Each route is
a function of the request body that returns (status, JSON answer)."""
from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Tuple

Route = Callable[[Dict[str, Any]], Tuple[int, Any]]


class FakeNode:
    def __init__(self, cluster_id: str, routes: Dict[str, Route]) -> None:
        self.cluster_id = cluster_id
        self.routes = routes
        self.requests: List[Tuple[str, Dict[str, Any]]] = []
        node = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                body: Dict[str, Any] = json.loads(self.rfile.read(length)) if length else dict(urllib.parse.parse_qsl(url.query))
                node.requests.append((url.path, body))
                route = node.routes.get(url.path)
                status, answer = route(body) if route else (404, {"error": {"code": "UNKNOWN_OP", "message": url.path}})
                if url.path.endswith("/watch") or url.path.endswith("/observe"):
                    self.send_response(status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("palisade-cluster-id", node.cluster_id)
                    self.end_headers()
                    for event, data in answer:
                        self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                    self.close_connection = True
                    return
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("palisade-cluster-id", node.cluster_id)
                self.end_headers()
                self.wfile.write(data)

            do_GET = _serve
            do_POST = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def paths(self) -> List[str]:
        return [p for p, _ in self.requests]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def session_routes(ttl_ms: int = 10_000) -> Dict[str, Route]:
    """Open, keepalive and close of session 7."""
    return {
        "/v1/session/open": lambda b: (200, {"session": 7, "ttlMs": ttl_ms}),
        "/v1/session/keepalive": lambda b: (200, {"ttlMs": ttl_ms}),
        "/v1/session/close": lambda b: (200, {"index": 1}),
    }
