"""A local OpenAI-compatible chat endpoint (``POST /v1/chat/completions``, ``stream``: SSE
``chat.completion.chunk`` events, then ``data: [DONE]``), run by uvicorn on loopback. Each
request takes the next scripted reply: a list of pieces (sent ``delay_s`` apart), or a
failure: ``("status", 500)``, ``("error_after", n, pieces)`` (an error event after n pieces),
``("garbage",)``, ``("stall", pieces)`` (pieces, then silence). Requests are recorded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Reply = Sequence[str] | tuple[Any, ...]


def chunk(piece: str) -> str:
    body = {"id": "c1", "object": "chat.completion.chunk", "model": "fake",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}  # fmt: skip
    return f"data: {json.dumps(body)}\n\n"


class FakeChatModel:
    def __init__(self, replies: Sequence[Reply], *, delay_s: float = 0.02) -> None:
        self.replies = list(replies)
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._complete,
                                           methods=["POST"])])  # fmt: skip

    async def _complete(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        n = len(self.requests) - 1
        reply = self.replies[n] if n < len(self.replies) else ["[neutral] ", "Okay."]
        if isinstance(reply, tuple) and reply and reply[0] == "status":
            return JSONResponse({"error": {"message": "the model is down"}}, status_code=reply[1])
        return StreamingResponse(self._stream(reply), media_type="text/event-stream")

    async def _stream(self, reply: Reply) -> AsyncIterator[str]:
        yield ": connected\n\n"
        yield f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'role': 'assistant'}}]})}\n\n"
        if isinstance(reply, tuple) and reply[0] == "garbage":
            yield "data: {this is not json\n\n"
            return
        if isinstance(reply, tuple) and reply[0] == "error_after":
            for piece in reply[2][: reply[1]]:
                await asyncio.sleep(self.delay_s)
                yield chunk(piece)
            yield 'data: {"error": {"message": "overloaded"}}\n\n'
            return
        if isinstance(reply, tuple) and reply[0] == "stall":
            for piece in reply[1]:
                yield chunk(piece)
            await asyncio.sleep(3600)
        for piece in reply:
            await asyncio.sleep(self.delay_s)
            yield chunk(piece)
        yield "data: [DONE]\n\n"
