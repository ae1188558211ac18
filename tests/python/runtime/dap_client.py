"""A minimal Debug Adapter Protocol client over a socket, recording every message it sees."""

from __future__ import annotations

import json
import socket
import threading
import time
from queue import Empty, Queue


class DapClient:
    def __init__(self, host: str, port: int, connect_timeout: float = 30.0):
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        # A bounded timeout: a send to an adapter that stopped reading fails instead of hanging.
        self.sock.settimeout(30)
        self.seq = 0
        self.inbox: Queue = Queue()
        self.transcript: list[dict] = []  # {"dir": "send"|"recv", "msg": {...}} in order
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()

    def _read_loop(self):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    try:
                        chunk = self.sock.recv(65536)
                    except socket.timeout:
                        continue  # idle adapter: keep waiting (wait_for has its own deadline)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(buf) < length:
                    try:
                        chunk = self.sock.recv(max(65536, length - len(buf)))
                    except socket.timeout:
                        continue
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                msg = json.loads(body.decode("utf-8"))
                with self.lock:
                    self.transcript.append({"dir": "recv", "msg": msg})
                self.inbox.put(msg)
        except OSError:
            return
        finally:
            self.inbox.put(None)

    def send(self, command: str, arguments: dict | None = None) -> int:
        self.seq += 1
        msg = {"seq": self.seq, "type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        data = json.dumps(msg).encode("utf-8")
        with self.lock:
            self.transcript.append({"dir": "send", "msg": msg})
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        return self.seq

    def wait_for(self, predicate, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("DAP message not received in time")
            try:
                msg = self.inbox.get(timeout=left)
            except Empty:
                raise TimeoutError("DAP message not received in time") from None
            if msg is None:
                raise ConnectionError("debug adapter closed the connection")
            if predicate(msg):
                return msg

    def response(self, seq: int, timeout: float = 60.0) -> dict:
        return self.wait_for(lambda m: m.get("type") == "response" and m.get("request_seq") == seq, timeout)

    def event(self, name: str, timeout: float = 60.0) -> dict:
        return self.wait_for(lambda m: m.get("type") == "event" and m.get("event") == name, timeout)

    def request(self, command: str, arguments: dict | None = None, timeout: float = 60.0) -> dict:
        return self.response(self.send(command, arguments), timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
