"""HTTP routes for pronunciation dictionaries: ``/v1/pronunciation-dictionaries``.

* ``POST`` ``{"name", "entries": [{"word", "pinyin" | "ipa" | "respelling"}, ...]}``: ``201``
  with the dictionary (its ``id`` among it);
* ``GET``: the caller's dictionaries, oldest first, without their entries;
* ``GET /{id}``: one, with its entries; ``PUT /{id}`` (``entries``, and ``name`` if it changes):
  its entries replaced, all at once; ``DELETE /{id}``: ``204``.

Every entry is checked on write (:func:`~emostream.text.pron.lexicon.parse_entries`: a pinyin
syllable that does not exist, a tone outside 1-5, an IPA symbol the model lacks, a word given
twice...): a bad one is ``400 bad_entry`` with ``param`` naming it (``entries[3].pinyin``) and
the reason, and nothing is stored. Limits: :data:`~emostream.text.pron.lexicon.MAX_ENTRIES`
entries a dictionary, words of 64 characters, pronunciations of 200, :data:`MAX_BODY_BYTES` a
body (``413 too_large``), :data:`~emostream.text.pron.lexicon.MAX_PER_OWNER` dictionaries an API
key (``409 too_many_dictionaries``). A dictionary belongs to the key that made it: another
key's answers ``404 unknown_dictionary`` as if it did not exist (with auth off every caller
is one). They are kept in the voice registry (SQLite, or the shared Redis: a dictionary made
through one server is used by every server of it); the registry out of reach is ``503
store_unavailable`` (the app's handler).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from emostream.text.pron.lexicon import (
    MAX_PER_OWNER,
    EntryError,
    PronunciationDictionary,
    clean_name,
    parse_entries,
)
from emostream.transport.errors import error
from emostream.transport.messages import ProtocolError, load_message
from emostream.transport.voice_access import STORE_UNAVAILABLE, store_unavailable_message
from emostream.voices.cloning.registry import DictionaryStore, StoreUnavailable

PREFIX = "/v1/pronunciation-dictionaries"
MAX_BODY_BYTES = 1 << 20  # 1,000 entries of 64 + 200 characters fit


def owned_dictionary(
    store: DictionaryStore, principal: str | None, dictionary_id: str
) -> PronunciationDictionary | None:
    """The dictionary ``dictionary_id`` if ``principal`` may use it (its owner's; everyone's
    with auth off, ``principal`` None), else None."""
    found = store.get_dictionary(dictionary_id)
    if found is None or (principal is not None and found.owner != principal):
        return None
    return found


def caller_dictionaries(store: DictionaryStore | None, principal: str | None
                        ) -> Callable[[str], PronunciationDictionary | None]:  # fmt: skip
    """A stream protocol's lookup of the caller's dictionaries (:func:`owned_dictionary`;
    ``store`` None: none); the registry out of reach refuses the start or line with
    ``store_unavailable`` and the connection goes on."""

    def lookup(dictionary_id: str) -> PronunciationDictionary | None:
        if store is None:
            return None
        try:
            return owned_dictionary(store, principal, dictionary_id)
        except StoreUnavailable as exc:
            raise ProtocolError(STORE_UNAVAILABLE, store_unavailable_message(exc)) from None

    return lookup


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


async def _body(request: Request) -> dict[str, Any]:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise _Refused(_too_large())
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise _Refused(_too_large())
    try:
        return load_message(raw)
    except ProtocolError as exc:
        raise _Refused(error(400, exc.code, exc.message, param=exc.param)) from None


def _too_large() -> Response:
    return error(413, "too_large", f"the body is over {MAX_BODY_BYTES} bytes")


def _unknown(dictionary_id: str) -> Response:
    return error(404, "unknown_dictionary", f"no pronunciation dictionary {dictionary_id[:80]!r}")


def dictionary_routes(
    store: DictionaryStore, *, owner_of: Callable[[Request], str | None] = lambda _r: None
) -> list[Route]:
    """The routes (module docs); ``owner_of(request)``: the caller's principal."""

    async def create(request: Request) -> Response:
        owner = owner_of(request)
        try:
            body = await _body(request)
            name = clean_name(body.get("name"))
            entries = parse_entries(body.get("entries"))
        except _Refused as refused:
            return refused.response
        except EntryError as exc:
            return error(400, "bad_entry", exc.message, param=exc.param)
        if len(store.dictionaries(owner=owner)) >= MAX_PER_OWNER:
            return error(409, "too_many_dictionaries", f"at most {MAX_PER_OWNER} pronunciation "
                         "dictionaries per API key: delete one first")  # fmt: skip
        dictionary = PronunciationDictionary.new(name, entries, owner)
        store.add_dictionary(dictionary)
        return JSONResponse(dictionary.as_dict(), status_code=201,
                            headers={"Location": f"{PREFIX}/{dictionary.id}"})  # fmt: skip

    async def listing(request: Request) -> Response:
        mine = store.dictionaries(owner=owner_of(request))
        return JSONResponse({"dictionaries": [d.as_dict(entries=False) for d in mine]})

    async def read(request: Request) -> Response:
        dictionary_id = request.path_params["dictionary_id"]
        found = owned_dictionary(store, owner_of(request), dictionary_id)
        return _unknown(dictionary_id) if found is None else JSONResponse(found.as_dict())

    async def replace_entries(request: Request) -> Response:
        dictionary_id = request.path_params["dictionary_id"]
        found = owned_dictionary(store, owner_of(request), dictionary_id)
        if found is None:
            return _unknown(dictionary_id)
        try:
            body = await _body(request)
            name = found.name if body.get("name") is None else clean_name(body["name"])
            entries = parse_entries(body.get("entries"))
        except _Refused as refused:
            return refused.response
        except EntryError as exc:
            return error(400, "bad_entry", exc.message, param=exc.param)
        new = replace(found, name=name, entries=entries, updated=time.time())
        if not store.replace_dictionary(new):  # deleted meanwhile
            return _unknown(dictionary_id)
        return JSONResponse(new.as_dict())

    async def delete(request: Request) -> Response:
        dictionary_id = request.path_params["dictionary_id"]
        found = owned_dictionary(store, owner_of(request), dictionary_id)
        if found is None or not store.delete_dictionary(dictionary_id):
            return _unknown(dictionary_id)
        return Response(status_code=204)

    item = PREFIX + "/{dictionary_id}"
    return [
        Route(PREFIX, create, methods=["POST"]),
        Route(PREFIX, listing, methods=["GET"]),
        Route(item, read, methods=["GET"]),
        Route(item, replace_entries, methods=["PUT"]),
        Route(item, delete, methods=["DELETE"]),
    ]
