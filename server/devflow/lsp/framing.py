"""Reading LSP messages (`Content-Length` framed JSON) from stdin, recovering from bad framing.

pygls' reader stays deaf after one broken header: a missing, malformed or wrong `Content-Length`
makes it read the body as a header line and every later message is glued to it. This reader
re-synchronises on the next `Content-Length:` header instead, and answers a body that is not
JSON with a JSON-RPC parse error, so a client that sent one bad message keeps a working server.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable

from lsprotocol import types

log = logging.getLogger("devflow.lsp")

_HEADER = re.compile(rb"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*?)\r?\n$")
_LENGTH = re.compile(rb"Content-Length:", re.IGNORECASE)
_NEXT_HEADER = re.compile(rb"Content-Length:[ \t]*\d+\r\n", re.IGNORECASE)
MAX_BODY = 512 * 1024 * 1024  # a larger length is a broken header, not a message


class FramedReader:
    """Bytes from an async `read_some()` source, with lines, exact reads and push-back."""

    def __init__(self, read_some: Callable[[], Awaitable[bytes]]):
        self._read_some = read_some
        self._buf = bytearray()
        self.eof = False

    async def _fill(self) -> bool:
        if self.eof:
            return False
        chunk = await self._read_some()
        if not chunk:
            self.eof = True
            return False
        self._buf += chunk
        return True

    async def readline(self) -> bytes:
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = bytes(self._buf[: i + 1])
                del self._buf[: i + 1]
                return line
            if not await self._fill():
                line = bytes(self._buf)
                self._buf.clear()
                return line

    async def read_body(self, n: int) -> bytes:
        """`n` bytes, or fewer when a header of the next message shows up inside them (an
        overstated length: waiting for the rest would leave the server deaf). A JSON body cannot
        hold that header: a raw CR LF cannot appear inside a JSON string."""
        while True:
            glued = _NEXT_HEADER.search(self._buf, 0, n)
            if glued is not None:
                n = glued.start()
                break
            if len(self._buf) >= n or not await self._fill():
                break
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def push_back(self, data: bytes) -> None:
        self._buf[:0] = data


async def read_headers(reader: FramedReader) -> int | None:
    """The body length of the next message, skipping anything that is not a header block; None at
    the end of the input."""
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is not None:
                return length
            continue  # a blank line outside a header block, or a block without a usable length
        m = _HEADER.match(line)
        if m is None:
            # Not a header (e.g. a body whose length was understated, glued to the next
            # message's header): resume at a Content-Length inside it, if any.
            at = _LENGTH.search(line, 1)
            if at is not None:
                reader.push_back(line[at.start():])
            log.warning("devflow: skipped %d bytes of input that were not an LSP message header", len(line))
            length = None
        elif m.group(1).lower() == b"content-length":
            value = m.group(2).strip()
            length = int(value) if value.isdigit() and int(value) <= MAX_BODY else None
            if length is None:
                log.warning("devflow: skipped a message with an invalid Content-Length header: %r", value[:40])


async def read_body(reader: FramedReader) -> bytes | None:
    """The body of the next message; None at the end of the input."""
    length = await read_headers(reader)
    return None if length is None else await reader.read_body(length)


def resync_after_bad_body(reader: FramedReader, body: bytes) -> None:
    """A body that is not JSON may hold the next message's header (an overstated length): the
    reader resumes there."""
    at = _LENGTH.search(body)
    if at is not None:
        reader.push_back(body[at.start():])


def parse_error_reply(body: bytes) -> dict:
    log.warning("devflow: a message body was not valid JSON (%d bytes); answered with a parse error", len(body))
    return {"jsonrpc": "2.0", "id": None,
            "error": {"code": types.ErrorCodes.ParseError.value, "message": "Parse error: the message body is not JSON"}}


async def serve(reader: FramedReader, protocol, stop_event, on_error: Callable[[Exception, object], None]) -> None:
    """Hand every message to `protocol` until the input ends or `stop_event` is set."""
    while not stop_event.is_set():
        body = await read_body(reader)
        if body is None:
            return
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except (json.JSONDecodeError, UnicodeDecodeError):
            resync_after_bad_body(reader, body)
            protocol._send_data(parse_error_reply(body))
            continue
        except Exception as e:  # noqa: BLE001 - a malformed notification: logged, the session goes on
            on_error(e, serve)
            continue
        try:
            protocol.handle_message(message)
        except Exception as e:  # noqa: BLE001
            on_error(e, serve)
