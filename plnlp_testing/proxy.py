"""A TCP proxy for the tests and the benchmarks that can be taken down, as
a store that stops answering."""
import contextlib
import socket
import threading

from plnlp_testing.processes import free_port

__all__ = ["PausableProxy"]


class PausableProxy:
    """A TCP proxy on a free port of 127.0.0.1 to ``target`` (``host:port``)
    that can be taken down, as a store that stops answering: its port then
    refuses connections and the open ones are cut. moto's server cannot be
    stopped and started instead, since it forgets its buckets."""

    def __init__(self, target: str) -> None:
        self.target = target.rsplit("/", 1)[-1].split(":")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            self._listener.close()
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # taken down
                return
            upstream = socket.create_connection((self.target[0], int(self.target[1])))
            with self._lock:
                self._open |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
