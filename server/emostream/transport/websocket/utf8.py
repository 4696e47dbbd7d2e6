"""A text message that is not UTF-8: close 1007 and one warning line, no traceback.

uvicorn's ``websockets-sansio`` protocol (0.55) decodes every text message itself; one that is
not UTF-8 was logged as an ERROR with a full traceback, on every connection that sent one, then
closed 1007 (RFC 6455 §8.1: the connection must be failed). :class:`Utf8CheckedProtocol`
checks the message first: such a connection is closed ``1007`` with the reason
:data:`INVALID_UTF8_REASON`, the app sees a disconnect with that code and reason (and counts
``invalid_utf8``), and one WARNING line names the client. Nothing after the close frame is read,
so that is one line per connection, however many bad frames came in one packet.

``serve`` passes it as uvicorn's ``ws`` protocol.
"""

from __future__ import annotations

import logging

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from emostream.transport.errors import INVALID_UTF8_REASON

log = logging.getLogger(__name__)

UNSUPPORTED_DATA = 1007  # close code: "data inconsistent with the type of the message"


def is_utf8(data: bytes | bytearray) -> bool:
    """Whether ``data`` decodes as UTF-8 (ASCII, JSON's usual form, is checked without it)."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Utf8CheckedProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol; a text message that is not UTF-8 closes the
    connection ``1007`` with one warning (see the module docs)."""

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and not self.close_sent:
            data = self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
            if not is_utf8(data):
                self.frames = []
                self._refuse_text(len(data))
                return
        super().send_receive_event_to_app()

    def _refuse_text(self, size: int) -> None:
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.warning("%s sent a text message of %d bytes that is not UTF-8; closed %d",
                    client, size, UNSUPPORTED_DATA)  # fmt: skip
        self.conn.send_close(UNSUPPORTED_DATA, INVALID_UTF8_REASON)
        self.handle_parser_exception()  # the app's disconnect, the close frame, the socket
