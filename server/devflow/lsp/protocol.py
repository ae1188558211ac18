"""pygls' protocol plus what command handlers need and pygls does not hand them: the
ExecuteCommandParams of the request (its client-created `workDoneToken`) and whether the client
cancelled the request (`$/cancelRequest`)."""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol


class DevflowProtocol(LanguageServerProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command_params: dict[Any, types.ExecuteCommandParams] = {}

    def _handle_request(self, msg_id, method_name: str, params: Any):
        if method_name == types.WORKSPACE_EXECUTE_COMMAND:
            self.command_params[msg_id] = params
        return super()._handle_request(msg_id, method_name, params)

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
