// VTube Studio driver: mouth shapes to a VTube Studio model through its public plugin API
// (a WebSocket, ws://localhost:8001 by default; https://github.com/DenchiSoft/VTubeStudio).
//
//   const vts = new VTubeStudioDriver({ url: 'ws://localhost:8001' });
//   await vts.connect();            // first time: VTube Studio asks the user to allow the plugin
//   room.on('mouth', (f) => vts.mouth(f));
//
// Every request carries apiName "VTubeStudioPublicAPI", apiVersion "1.0", a requestID and its
// messageType. connect(): AuthenticationTokenRequest (once: the token is kept in localStorage),
// then AuthenticationRequest with it (a revoked token is dropped and asked for again, once).
// mouth(frame): InjectParameterDataRequest setting the default input parameters MouthOpen
// (frame.open, 0-1) and MouthSmile ((frame.form + 1) / 2: 0 rounded, 0.5 neutral, 1 spread);
// VTube Studio keeps a value for a second, so a resting mouth is sent once and tracking then
// takes the parameters back. Sent as the page's playout clock reaches each frame (room-listener.js),
// so the model moves with what is heard, not with what arrived.

import { Emitter } from './emitter.js';

export const VTS_API = Object.freeze({ apiName: 'VTubeStudioPublicAPI', apiVersion: '1.0' });
export const VTS_DEFAULT_URL = 'ws://localhost:8001';
const TOKEN_KEY = 'emostream.vts.token';

/** One request of the VTube Studio API. */
export function vtsRequest(messageType, data, requestID) {
  const msg = { ...VTS_API, requestID, messageType };
  if (data !== undefined) msg.data = data;
  return msg;
}

/** The InjectParameterDataRequest data for a mouth frame. */
export function mouthParameters(frame, { open = 'MouthOpen', smile = 'MouthSmile' } = {}) {
  const clamp = (x) => Math.min(1, Math.max(0, x));
  return {
    faceFound: false,
    mode: 'set',
    parameterValues: [
      { id: open, value: clamp(frame.open) },
      { id: smile, value: clamp((frame.form + 1) / 2) },
    ],
  };
}

export class VTubeStudioDriver extends Emitter {
  /**
   * @param {object} [options]
   * @param {string} [options.url='ws://localhost:8001']
   * @param {typeof WebSocket} [options.WebSocket=globalThis.WebSocket]
   * @param {{getItem: Function, setItem: Function, removeItem: Function}|null} [options.storage] where the token is kept (localStorage)
   * @param {string} [options.pluginName='EmoStream Live']
   * @param {string} [options.pluginDeveloper='EmoStream']
   * @param {{open?: string, smile?: string}} [options.parameters] input parameter ids
   */
  constructor({
    url = VTS_DEFAULT_URL, WebSocket: WS = globalThis.WebSocket,
    storage = globalThis.localStorage || null, pluginName = 'EmoStream Live',
    pluginDeveloper = 'EmoStream', parameters = {},
  } = {}) {
    super();
    this.url = url;
    this._WS = WS;
    this.storage = storage;
    this.plugin = { pluginName, pluginDeveloper };
    this.parameters = parameters;
    this.ws = null;
    this.authenticated = false;
    this.sent = 0;
    this._ids = 0;
    this._pending = new Map(); // requestID -> resolve
  }

  /** Connect and authenticate; resolves true once the plugin may inject parameters. */
  async connect() {
    await this._open();
    let token = this.storage ? this.storage.getItem(TOKEN_KEY) : null;
    for (let attempt = 0; attempt < 2; attempt++) {
      if (!token) {
        const got = await this._request('AuthenticationTokenRequest', { ...this.plugin });
        token = got.data && got.data.authenticationToken;
        if (!token) throw new Error(`VTube Studio gave no token: ${JSON.stringify(got.data)}`);
        if (this.storage) this.storage.setItem(TOKEN_KEY, token);
      }
      const auth = await this._request('AuthenticationRequest', { ...this.plugin, authenticationToken: token });
      if (auth.data && auth.data.authenticated) {
        this.authenticated = true;
        this.emit('authenticated', {});
        return true;
      }
      if (this.storage) this.storage.removeItem(TOKEN_KEY); // revoked: ask again, once
      token = null;
    }
    return false;
  }

  /** Set the mouth (a frame of room-listener.js's `mouth` event); false when not connected. */
  mouth(frame) {
    if (!this.authenticated || !this.ws || this.ws.readyState !== 1) return false;
    // The request id names the frame (utterance, its time): VTube Studio logs it with the request.
    const id = `mouth-${frame.utterance ?? 0}-${frame.t}-${++this._ids}`;
    this.ws.send(JSON.stringify(vtsRequest('InjectParameterDataRequest', mouthParameters(frame, this.parameters), id)));
    this.sent += 1;
    return true;
  }

  close() {
    if (this.ws) this.ws.close();
  }

  _open() {
    const ws = new this._WS(this.url);
    this.ws = ws;
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error(`cannot reach VTube Studio at ${this.url} (is its API on?)`));
      ws.onclose = () => {
        this.authenticated = false;
        for (const settle of this._pending.values()) settle(null);
        this._pending.clear();
        this.emit('close', {});
      };
      ws.onmessage = (ev) => this._onMessage(ev.data);
    });
  }

  _onMessage(data) {
    let msg;
    try {
      msg = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data));
    } catch {
      return;
    }
    const settle = this._pending.get(msg.requestID);
    if (settle) {
      this._pending.delete(msg.requestID);
      settle(msg);
    } else if (msg.messageType === 'APIError') {
      this.emit('error', msg.data || {});
    }
  }

  _request(messageType, data) {
    const id = `r${++this._ids}`;
    return new Promise((resolve, reject) => {
      this._pending.set(id, (msg) => {
        if (msg === null) reject(new Error('VTube Studio closed the connection'));
        else if (msg.messageType === 'APIError') reject(new Error(`VTube Studio: ${msg.data && msg.data.message}`));
        else resolve(msg);
      });
      this.ws.send(JSON.stringify(vtsRequest(messageType, data, id)));
    });
  }
}
