"""JSON-RPC promises kept over raw stdio (a client library would never send these messages):
requests with invalid parameters get an error reply, a broken `Content-Length` header or body
does not leave the server deaf, and `exit` without `shutdown` ends with status 1."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time

import pytest

from lsp_harness import SERVER_CMD

URI = "file:///tmp/devflow-lsp-raw/a.py"


class RawServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(SERVER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 100
        self.replies: dict = {}

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put(json.loads(out.read(length)))

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params, msg_id=None) -> object:
        msg_id = self.next_id if msg_id is None else msg_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def reply(self, msg_id, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if msg_id in self.replies:
                return self.replies.pop(msg_id)
            try:
                msg = self.messages.get(timeout=0.1)
            except queue.Empty:
                continue
            if "method" not in msg and "id" in msg:
                self.replies[msg["id"]] = msg
        raise AssertionError(f"no reply to request {msg_id!r}")

    def initialize(self) -> None:
        got = self.reply(self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}}))
        assert "result" in got
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        self.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": URI, "languageId": "python", "version": 1, "text": "import torch\nx = 1\n"}}})

    def alive(self) -> None:
        """The server still answers a well-formed request."""
        got = self.reply(self.request("textDocument/hover", {
            "textDocument": {"uri": URI}, "position": {"line": 0, "character": 1}}))
        assert "error" not in got, got

    def close(self) -> int:
        if self.proc.poll() is None:
            self.reply(self.request("shutdown", None))
            self.send({"jsonrpc": "2.0", "method": "exit"})
        try:
            return self.proc.wait(15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def server():
    s = RawServer()
    s.initialize()
    yield s
    s.close()


INVALID = {
    "textDocument/hover": {"textDocument": {"uri": URI}, "position": {"line": "zero"}},
    "textDocument/codeAction": {"textDocument": {"uri": URI}, "range": None, "context": {}},
    "textDocument/inlayHint": {"textDocument": 42},
    "textDocument/diagnostic": {"textDocument": {"uri": URI}, "previousResultId": ["not", "a", "string"]},
    "workspace/executeCommand": {"command": None, "arguments": "not a list"},
    "textDocument/completion": [1, 2, 3],
}


def test_requests_with_invalid_params_get_an_error_reply(server):
    for method, params in INVALID.items():
        msg_id = server.request(method, params)
        got = server.reply(msg_id)
        assert "error" in got and got["error"]["code"] in (-32602, -32600, -32601), (method, got)
    server.alive()


def test_a_request_without_jsonrpc_member_is_rejected(server):
    server.send({"id": 7, "method": "textDocument/hover", "params": {}})
    assert server.reply(7)["error"]["code"] == -32600
    server.alive()


@pytest.mark.parametrize("garbage", [
    b"Content-Length: abc\r\n\r\n{}",  # not a number
    b"Content-Lenght: 10\r\n\r\n{\"a\": 1}\r\n",  # misspelt header
    b"Content-Length: 5\r\n\r\n{\"jsonrpc\": \"2.0\", \"method\": \"initialized\"}",  # understated
    b"Content-Length: 400\r\n\r\n{\"jsonrpc\": \"2.0\"}",  # overstated: swallows the next message
    b"Content-Length: 9\r\n\r\nnot json!",  # not JSON
    b"garbage without any header\r\n",
    b"Content-Length: 99999999999999\r\n\r\n",  # absurd length
], ids=["nan", "misspelt", "understated", "overstated", "not-json", "no-header", "absurd"])
def test_a_broken_message_does_not_leave_the_server_deaf(server, garbage):
    server.send_raw(garbage)
    # The next well-formed requests are answered (one may be lost to an overstated length).
    first = server.request("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 1}})
    second = server.request("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 1}})
    assert "error" not in server.reply(second)
    if b"400" not in garbage:
        server.reply(first)
    server.alive()


def test_a_parse_error_gets_a_parse_error_reply(server):
    server.send_raw(b"Content-Length: 9\r\n\r\nnot json!")
    got = server.reply(None)
    assert got["error"]["code"] == -32700


def test_exit_without_shutdown_exits_1():
    s = RawServer()
    s.initialize()
    s.send({"jsonrpc": "2.0", "method": "exit"})
    assert s.proc.wait(15) == 1


def test_exit_after_shutdown_exits_0():
    s = RawServer()
    s.initialize()
    assert s.close() == 0


def test_memory_stays_flat_over_identical_edits():
    """RSS of the server over 3,000 edits (bench/lsp_memory.py; loose: a leak of the old size,
    about 2 KB per edit, grew it by 4 MB between edit 1,000 and 3,000)."""
    import asyncio
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "bench" / "lsp_memory.py"
    spec = importlib.util.spec_from_file_location("lsp_memory", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = asyncio.run(bench.measure(3000, 1000))
    print("RSS MB after 0/1000/2000/3000 edits:", [round(mb, 1) for _, mb in rows])
    assert rows[-1][1] - rows[1][1] < 2.0, rows
