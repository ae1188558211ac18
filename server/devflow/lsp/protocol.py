"""pygls' protocol plus what command handlers need and pygls does not hand them: the
ExecuteCommandParams of the request (its client-created `workDoneToken`) and whether the client
cancelled the request (`$/cancelRequest`). It also keeps the JSON-RPC promises pygls does not:
a request whose parameters do not fit its method gets an error reply (pygls dropped it), and
`exit` without `shutdown` ends the process with status 1. Documents it opens follow Python's
line model (text_sync)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol

from devflow.lsp import text_sync

log = logging.getLogger("devflow.lsp")


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@dataclass(frozen=True)
class Rejected:
    """A request that cannot be handled as sent: it is answered with `error`."""

    id: Any
    method: str
    error: JsonRpcException


class DevflowProtocol(LanguageServerProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command_params: dict[Any, types.ExecuteCommandParams] = {}
        self.exit_code: int | None = None  # set by `exit`: 0 after `shutdown`, else 1

    # pygls builds its workspace in `initialize`; documents then use devflow's line model.
    @property
    def _workspace(self):
        return self.__dict__.get("_devflow_workspace")

    @_workspace.setter
    def _workspace(self, workspace) -> None:
        self.__dict__["_devflow_workspace"] = text_sync.adopt(workspace)

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and isinstance(data.get("method"), str):
                return Rejected(data["id"], data["method"], exc)
            raise

    def handle_message(self, message) -> None:
        if isinstance(message, dict):  # no "jsonrpc" member: not a JSON-RPC 2.0 message
            if "id" in message and "method" in message:
                message = Rejected(message["id"], str(message["method"]), JsonRpcInvalidRequest())
            else:
                log.warning("devflow: ignored a message that is not JSON-RPC 2.0")
                return
        if isinstance(message, Rejected):
            log.warning("devflow: %s request %r rejected: %s", message.method, message.id, message.error.message)
            self._send_response(message.id, error=types.ResponseError(
                code=message.error.code,
                message=f"{message.method}: {message.error.message or 'invalid request'}"
                        " (the parameters do not match the LSP specification)"))
            return
        if getattr(message, "method", None) == types.EXIT:
            self.exit_code = 0 if self._shutdown else 1
        super().handle_message(message)

    def _handle_request(self, msg_id, method_name: str, params: Any):
        if method_name == types.WORKSPACE_EXECUTE_COMMAND:
            self.command_params[msg_id] = params
        return super()._handle_request(msg_id, method_name, params)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        # pygls files the future of every notification handled by a generator or a coroutine
        # (didChange, didOpen, ...) under a fresh uuid in `_request_futures` and never removes
        # it: about 2 KB per keystroke. A notification's entry is dropped once it is done.
        if callback == self._check_handler_result:
            check, loop = callback, _running_loop()

            def callback(future, _id=msg_id):
                # Later, on the loop: `shutdown` cancels pending futures while iterating over
                # the dict, and a cancelled future runs this callback at once.
                try:
                    loop.call_soon_threadsafe(self._request_futures.pop, _id, None)
                except (AttributeError, RuntimeError):  # no loop (tests) or closed: nothing left to free
                    pass
                check(future)
        return super()._execute_handler(msg_id, handler, callback, args, kwargs)

    def take_command_params(self) -> tuple[Any, types.ExecuteCommandParams | None]:
        """(request id, params) of the executeCommand request being handled."""
        msg_id = self.msg_id
        return msg_id, self.command_params.pop(msg_id, None)

    def request_cancelled(self, msg_id) -> bool:
        """True once the client cancelled request `msg_id` (pygls then forgets its future)."""
        if msg_id is None:
            return False
        future = self._request_futures.get(msg_id)
        return future is None or future.cancelled()
