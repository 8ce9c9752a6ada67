"""The HTTP endpoint: a WSGI app served on the loopback interface from a daemon thread."""

from __future__ import annotations

import threading
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["HOST", "Endpoint"]

HOST = "127.0.0.1"


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # a scrape is not news
        pass


class Endpoint:
    """``app`` answering at ``http://127.0.0.1:PORT`` (``port=0``: any free one) until closed.

    Only the loopback interface listens; ``server_class`` is the WSGI server to run.
    """

    def __init__(self, app: Any, port: int, server_class: type[WSGIServer]) -> None:
        self.server = make_server(HOST, port, app, server_class, _Quiet)
        # A short poll interval so that close() returns at once rather than in 0.5 s.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def port(self) -> int:
        """The port listened on."""
        return int(self.server.server_port)

    def close(self) -> None:
        """Stop serving, close the listening socket and wait for the thread."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
