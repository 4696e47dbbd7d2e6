"""What stands between the network and the routes: API keys and tokens (auth), the ASGI guard,
Host and Origin rules, per-key limits, the access log's redaction, the slowloris deadlines
(uvicorn's HTTP protocol) and SO_REUSEPORT sockets."""
