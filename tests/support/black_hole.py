"""A black-hole server: a TCP listener on loopback that accepts every connection and never sends a byte, as a webhook
or an SMTP server does when it hangs (a client waits for its answer, or its greeting, until its own timeout).

It reads and discards what a client sends, so it sees the moment the client gives up and closes: `accepted` counts
connections, `open_now()` those the client has not closed. `close()` (or leaving the `with`) shuts every connection
and stops listening, so whatever still waits on it fails at once.
"""

from __future__ import annotations

import socket
import threading

__all__ = ["BlackHole"]


class BlackHole:
    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/T000/B000/secret-token"
        self.accepted = 0
        self._conns: list[socket.socket] = []
        self._closed_by_client: set[int] = set()
        self._lock = threading.Lock()
        self._stopping = False
        threading.Thread(target=self._accept, name="black-hole", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            with self._lock:
                self.accepted += 1
                self._conns.append(conn)
                no = len(self._conns) - 1
            threading.Thread(target=self._drain, args=(conn, no), daemon=True).start()

    def _drain(self, conn: socket.socket, no: int) -> None:
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        with self._lock:
            if not self._stopping:
                self._closed_by_client.add(no)

    def open_now(self) -> int:
        """Connections accepted that the client has not closed."""
        with self._lock:
            return len(self._conns) - len(self._closed_by_client)

    def close(self) -> None:
        with self._lock:
            self._stopping = True
            conns = list(self._conns)
        try:  # wakes the accept() under way (a close alone would leave the socket listening while it waits)
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for conn in conns:
            try:  # the client's read ends at once (and so does our drain's recv)
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def __enter__(self) -> BlackHole:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
