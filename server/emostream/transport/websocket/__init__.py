"""``/v1/stream``, the WebSocket side of the transport: the connection (receive loop, one task
per utterance), the sans-I/O protocol state machine and its v1.1 contexts, binary frames, the
line queue, and the UTF-8 check uvicorn runs on text frames."""
