"""API keys, tokens and the start-up policy (sans-I/O: no server)."""

from __future__ import annotations

import pytest

from emostream.config import Settings
from emostream.transport.edge.auth import (
    AuthError,
    ConfigError,
    KeyStore,
    TokenSigner,
    authenticator,
    bearer,
    is_loopback,
    new_key,
    parse_keys_file,
    subprotocol_token,
)
from emostream.transport.edge.origins import OriginPolicy

SECRET = b"s" * 32


def test_file_keys_are_hashed_at_rest_and_checked() -> None:
    key, entry = new_key("alice")
    line = entry.line()
    secret = key.split("_", 2)[2]  # es_<id>_<secret>; the secret may itself hold "_"
    assert key not in line and secret not in line  # only salt + HMAC are stored
    [parsed] = parse_keys_file(f"# comment\n\n{line}\n")
    store = KeyStore([parsed])
    assert store.principal(key) == "alice"
    assert store.principal(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    other, _ = new_key("bob")
    assert store.principal(other) is None  # unknown id
    # Same id, another secret: the HMAC decides.
    forged = f"es_{entry.key_id}_{'x' * 43}"
    assert store.principal(forged) is None


def test_env_keys_get_a_stable_principal() -> None:
    store = KeyStore(plain=["0123456789abcdef-secret"])
    name = store.principal("0123456789abcdef-secret")
    assert name is not None and name.startswith("env-")
    assert KeyStore(plain=["0123456789abcdef-secret"]).principal("0123456789abcdef-secret") == name
    assert store.principal("0123456789abcdef-secreT") is None


@pytest.mark.parametrize(
    "text", ["abc alice 00 " + "0" * 64, "deadbeef alice zz " + "0" * 64, "deadbeef a b", "x"]
)
def test_bad_keys_file_lines_refuse_to_start(text: str) -> None:
    with pytest.raises(ConfigError, match="line 1"):
        parse_keys_file(text)


def test_tokens_expire_and_cannot_be_forged() -> None:
    now = [1000.0]
    signer = TokenSigner(SECRET, ttl_s=60, clock=lambda: now[0])
    token, exp = signer.mint("alice")
    assert exp == 1060 and signer.principal(token) == "alice"
    payload, _, sig = token.partition(".")
    with pytest.raises(AuthError) as bad:
        TokenSigner(b"t" * 32, clock=lambda: now[0]).principal(token)
    assert bad.value.code == "unauthorized"
    # Another principal's payload with alice's signature.
    bob_payload = signer.mint("bob")[0].partition(".")[0]
    with pytest.raises(AuthError):
        signer.principal(f"{bob_payload}.{sig}")
    for junk in ["", ".", "abc", "a.b", f"{payload}.", "x" * 2000]:
        with pytest.raises(AuthError):
            signer.principal(junk)
    now[0] = 1060.0
    with pytest.raises(AuthError) as expired:
        signer.principal(token)
    assert expired.value.code == "token_expired"


def test_loopback_default_and_public_refusal() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("example.com")
    assert not authenticator(Settings()).enabled  # loopback, no keys: auth off
    with pytest.raises(ConfigError, match="refusing to serve 0.0.0.0"):
        authenticator(Settings(host="0.0.0.0"))
    assert not authenticator(Settings(host="0.0.0.0", allow_unauthenticated=True)).enabled
    keyed = authenticator(Settings(host="0.0.0.0", api_keys="k" * 20))
    assert keyed.enabled and keyed.principal("k" * 20).startswith("env-")
    with pytest.raises(ConfigError, match="at least 16"):
        authenticator(Settings(api_keys="short"))
    with pytest.raises(ConfigError, match="api_keys_file"):
        authenticator(Settings(api_keys_file="/nonexistent/keys"))


def test_authenticator_takes_keys_and_tokens_but_tokens_do_not_mint() -> None:
    auth = authenticator(Settings(api_keys="k" * 20, token_secret="z" * 32))
    token, _ = auth.tokens.mint("env-x")
    assert auth.principal(token) == "env-x"
    with pytest.raises(AuthError):
        auth.principal(token, allow_token=False)
    with pytest.raises(AuthError):
        auth.principal(None)
    with pytest.raises(AuthError):
        auth.principal("not-a-key")


def test_credential_parsing() -> None:
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    assert bearer("Basic abc") is None and bearer("Bearer ") is None and bearer(None) is None
    assert subprotocol_token(["emostream.v1", "emostream.token.a.b"]) == "a.b"
    assert subprotocol_token(["emostream.v1"]) is None


def test_origin_policy() -> None:
    default = OriginPolicy("")
    assert default.allows(None, "tts.example:8000")  # not a browser
    assert default.allows("https://tts.example:8000", "tts.example:8000")  # same origin
    assert default.allows("http://localhost:5173", "tts.example:8000")
    assert default.allows("http://127.0.0.1:9000", "tts.example:8000")
    assert not default.allows("https://evil.example", "tts.example:8000")
    assert not default.allows("null", "tts.example:8000")
    assert not default.allows("https://tts.example:8001", "tts.example:8000")
    listed = OriginPolicy("https://app.example, https://b.example/")
    assert listed.allows("https://app.example", "x") and listed.allows("https://B.example", "x")
    assert not listed.allows("https://c.example", "x")
    assert OriginPolicy("*").allows("https://anything.example", "x")


def test_keys_are_refused_where_only_tokens_belong() -> None:
    """A key offered outside the Authorization header (query, subprotocol) is refused with a
    message saying where it goes; a token is taken there."""
    auth = authenticator(Settings(api_keys="k" * 20, token_secret="z" * 32))
    token, _ = auth.tokens.mint("env-x")
    assert auth.principal(token, allow_key=False) == "env-x"
    with pytest.raises(AuthError, match="only in the 'Authorization: Bearer' header") as refused:
        auth.principal("k" * 20, allow_key=False)
    assert refused.value.code == "unauthorized"
    assert auth.principal("k" * 20).startswith("env-")  # in the header: still a key
