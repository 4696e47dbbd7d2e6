// One WebSocket opening for the clients (EmoStreamClient, EmoStreamContexts, RoomListener): binary frames as
// ArrayBuffer, `owner.state` 'connecting' until open (then `openState`), an 'open' event, and a
// promise that rejects if the socket fails or closes before it opens. Messages and close go to
// the owner's `_onMessage(data)` / `_onClose(event)`.

/**
 * @param {{_WS: typeof WebSocket, url: string, state: string, ws: WebSocket|null,
 *          emit: Function, _onMessage: Function, _onClose: Function}} owner
 * @param {string} openState the owner's state once the socket is open
 * @returns {Promise<void>}
 */
export function openSocket(owner, openState) {
  owner.state = 'connecting';
  const ws = new owner._WS(owner.url);
  ws.binaryType = 'arraybuffer';
  owner.ws = ws;
  return new Promise((resolve, reject) => {
    ws.onopen = () => {
      owner.state = openState;
      owner.emit('open', {});
      resolve();
    };
    ws.onerror = () => {
      if (owner.state === 'connecting') reject(new Error(`cannot connect to ${owner.url}`));
    };
    ws.onclose = (ev) => {
      const wasConnecting = owner.state === 'connecting';
      owner._onClose(ev);
      if (wasConnecting) reject(new Error(`connection to ${owner.url} closed (${ev && ev.code})`));
    };
    ws.onmessage = (ev) => owner._onMessage(ev.data);
  });
}

/**
 * A server's text message as an object, or null after emitting the client's local
 * `bad_server_json` error (one rule for every client).
 * @param {{emit: Function}} owner
 * @param {string} data
 * @returns {object|null}
 */
export function parseServerJson(owner, data) {
  try {
    return JSON.parse(data);
  } catch {
    owner.emit('error', { code: 'bad_server_json', message: 'server sent malformed JSON', local: true });
    return null;
  }
}
