// EmoStreamContexts: several utterances at once on one socket (EmoStream protocol v1.1).
//
//   const mux = new EmoStreamContexts({ url: 'ws://127.0.0.1:8000/v1/stream' });
//   await mux.open();
//   const turn = mux.context({ voice: 'af_heart', format: { codec: 'pcm_s16le', sample_rate: 24000 } });
//   turn.on('audio', ({ samples, sampleRate }) => play(samples, sampleRate));
//   turn.text('Sure, let me check.');
//   const stats = await turn.end();           // after its done
//   // barge-in: the old turn only; the next one can start at once
//   old.cancel();
//   const next = mux.context({ voice: 'af_heart' });
//
// Every message of a context carries its `context_id`; the server's `started` gives it a
// channel, and each binary frame starts with an 8-byte header (version, flags, channel uint16
// BE, sequence uint32 BE) saying whose audio it is (README "WebSocket protocol v1.1"). Each
// context decodes its own frames with its own decoder and emits `audio` ({samples,
// sampleRate}, mono float32). Playback is left to the caller (several contexts may speak at
// once; play the one you want, e.g. through an AudioPlayer). A context's events: started,
// segment, timestamps, words, audio, error, done. Connection events: open, close, error (not
// about a context), message (every JSON event), and the line queue's events.

import { Emitter } from './emitter.js';
import { createDecoder as defaultCreateDecoder } from './decoder.js';
import { openSocket, parseServerJson } from './socket.js';

export const FRAME_VERSION = 1;
export const FRAME_HEADER_BYTES = 8;
const CONTEXT_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Split a v1.1 binary frame: {version, flags, channel, sequence, payload (a view)}. */
export function decodeFrame(data) {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  if (bytes.length < FRAME_HEADER_BYTES) throw new Error(`frame of ${bytes.length} bytes has no header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint8(0);
  if (version !== FRAME_VERSION) throw new Error(`frame header version ${version}`);
  return {
    version,
    flags: view.getUint8(1),
    channel: view.getUint16(2, false),
    sequence: view.getUint32(4, false),
    payload: bytes.subarray(FRAME_HEADER_BYTES),
  };
}

/** A v1.1 binary frame (what the server sends; for tests and fakes). */
export function encodeFrame(channel, sequence, payload, flags = 0) {
  const body = payload instanceof Uint8Array ? payload : new Uint8Array(payload);
  const out = new Uint8Array(FRAME_HEADER_BYTES + body.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, FRAME_VERSION);
  view.setUint8(1, flags);
  view.setUint16(2, channel, false);
  view.setUint32(4, sequence >>> 0, false);
  out.set(body, FRAME_HEADER_BYTES);
  return out;
}

let counter = 0;
function newContextId() {
  counter += 1;
  const rand = Math.random().toString(36).slice(2, 10);
  return `ctx-${Date.now().toString(36)}-${counter}-${rand}`;
}

/** One context: an utterance with its own voice, controls, decoder and audio. */
export class Context extends Emitter {
  constructor(mux, id, request) {
    super();
    this.mux = mux;
    this.id = id;
    this.request = request;
    this.started = null;
    this.channel = null;
    this.done = null;
    this.ended = false;
    this.cancelled = false;
    this.finished = false;
    this.packets = 0;
    this.samplesDecoded = 0;
    this.gaps = 0; // frames missing by sequence number
    this.nextSequence = 0;
    this.errors = [];
    this.decoder = null;
    this._decoderPromise = null;
    this._backlog = [];
    this.promise = new Promise((resolve, reject) => {
      this._resolve = resolve;
      this._reject = reject;
    });
    this.promise.catch(() => {});
  }

  text(text) {
    this._requireOpen('text');
    this.mux._send({ type: 'text', context_id: this.id, text: String(text) });
  }

  flush() {
    this._requireOpen('flush');
    this.mux._send({ type: 'flush', context_id: this.id });
  }

  /** No more text: resolves with the stats after `done`. */
  end() {
    this._requireOpen('end');
    this.ended = true;
    this.mux._send({ type: 'end', context_id: this.id });
    return this.promise;
  }

  /** Stop this context only; its late frames are dropped; resolves after its `done`. */
  cancel() {
    if (this.finished || this.cancelled) return this.promise;
    this.cancelled = true;
    this._backlog = [];
    if (this.decoder) this.decoder.reset();
    if (this.mux.connected) this.mux._send({ type: 'cancel', context_id: this.id });
    return this.promise;
  }

  get stats() {
    const done = this.done || {};
    return {
      contextId: this.id,
      channel: this.channel,
      streamId: this.started ? this.started.stream_id : null,
      packets: this.packets,
      samplesDecoded: this.samplesDecoded,
      gaps: this.gaps,
      audioMs: typeof done.audio_ms === 'number' ? done.audio_ms : null,
      cancelled: Boolean(this.cancelled || done.cancelled),
      errors: this.errors.slice(),
      wordsSent: Array.isArray(done.words_sent) ? done.words_sent : null,
    };
  }

  _requireOpen(what) {
    if (this.finished) throw new Error(`${what}() on a finished context`);
    if (this.ended) throw new Error(`${what}() after end()`);
    if (this.cancelled) throw new Error(`${what}() after cancel()`);
  }
}

export class EmoStreamContexts extends Emitter {
  /**
   * @param {object} options
   * @param {string} options.url ws(s)://host/v1/stream
   * @param {typeof WebSocket} [options.WebSocket=globalThis.WebSocket]
   * @param {{codec: string, sample_rate: number}} [options.format] default output format
   * @param {object} [options.defaults] default start fields (voice, speed, ...)
   * @param {Function} [options.createDecoder] decoder factory (decoder.js's, or a fake)
   * @param {'auto'|'webcodecs'|'wasm'} [options.decoder='auto']
   */
  constructor({
    url,
    WebSocket: WS = globalThis.WebSocket,
    format = { codec: 'opus', sample_rate: 48000 },
    defaults = {},
    createDecoder = defaultCreateDecoder,
    decoder = 'auto',
    wasmUrl,
    OpusDecoderClass,
  } = {}) {
    super();
    if (!url) throw new Error('EmoStreamContexts needs a url');
    this.url = url;
    this._WS = WS;
    this.format = { ...format };
    this.defaults = { ...defaults };
    this._createDecoder = createDecoder;
    this._decoderOptions = { prefer: decoder, wasmUrl, OpusDecoderClass };
    this.ws = null;
    this.state = 'closed';
    /** @type {Map<string, Context>} contexts between start and done */
    this.contexts = new Map();
    /** @type {Map<number, Context>} */
    this._byChannel = new Map();
  }

  get connected() {
    return this.ws !== null && this.state === 'open';
  }

  open() {
    if (this._opening && this.state !== 'closed') return this._opening;
    this._opening = openSocket(this, 'open');
    return this._opening;
  }

  close() {
    if (this.ws) this.ws.close();
  }

  /**
   * Open a context (send its `start`). Options: any start field (voice, emotion, speed,
   * word_timestamps, prompt, ...; null/undefined left out), `format`, and `contextId` (else one
   * is made). Returns the Context; `context.promise` resolves with its stats after `done`.
   */
  context(options = {}) {
    const { contextId, ...fields } = { ...this.defaults, ...options };
    const id = contextId === undefined ? newContextId() : String(contextId);
    if (!CONTEXT_ID.test(id)) throw new Error(`context id ${JSON.stringify(id)}: 1-64 of A-Z a-z 0-9 . _ : -`);
    if (this.contexts.has(id)) throw new Error(`context ${id} is still live`);
    const msg = { type: 'start', context_id: id };
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined && value !== null && key !== 'format') msg[key] = value;
    }
    msg.format = { ...this.format, ...(fields.format || {}) };
    const ctx = new Context(this, id, msg);
    this.contexts.set(id, ctx);
    this._prepareDecoder(ctx, msg.format.codec, msg.format.sample_rate);
    this._send(msg);
    return ctx;
  }

  _send(msg) {
    if (!this.connected) throw new Error('EmoStreamContexts is not connected: await open() first');
    this.ws.send(JSON.stringify(msg));
  }

  // ---------------------------------------------------------------- decoding
  _prepareDecoder(ctx, codec, sampleRate) {
    ctx.decoderSpec = `${codec}/${sampleRate}`;
    const promise = this._createDecoder({
      codec,
      sampleRate,
      outputRate: sampleRate,
      ...this._decoderOptions,
      onSamples: (samples, rate) => {
        if (ctx.cancelled || ctx.finished) return;
        ctx.samplesDecoded += samples.length;
        ctx.emit('audio', { samples, sampleRate: rate });
      },
      onError: (err) => this._localError(ctx, 'decode_error', String((err && err.message) || err)),
    });
    ctx._decoderPromise = promise;
    promise.then(
      (dec) => {
        if (ctx._decoderPromise !== promise || ctx.finished) {
          dec.close();
          return;
        }
        ctx.decoder = dec;
        const backlog = ctx._backlog;
        ctx._backlog = [];
        for (const bytes of backlog) dec.decode(bytes);
      },
      (err) => this._localError(ctx, 'decoder_unavailable', String((err && err.message) || err)),
    );
  }

  // ---------------------------------------------------------------- incoming
  _onMessage(data) {
    if (typeof data !== 'string') {
      this._onFrame(data instanceof Uint8Array ? data : new Uint8Array(data));
      return;
    }
    const msg = parseServerJson(this, data);
    if (msg === null) return;
    this.emit('message', msg);
    const ctx = typeof msg.context_id === 'string' ? this.contexts.get(msg.context_id) : undefined;
    if (!ctx) {
      this.emit(msg.type === 'error' ? 'error' : msg.type, msg);
      return;
    }
    this._onContextEvent(ctx, msg);
  }

  _onFrame(bytes) {
    let frame;
    try {
      frame = decodeFrame(bytes);
    } catch (err) {
      this.emit('error', { code: 'bad_frame', message: String(err.message || err), local: true });
      return;
    }
    const ctx = this._byChannel.get(frame.channel);
    if (!ctx) {
      this.emit('error', { code: 'unknown_channel', message: `frame of channel ${frame.channel}`, local: true });
      return;
    }
    if (frame.sequence !== ctx.nextSequence) {
      const missing = frame.sequence - ctx.nextSequence;
      ctx.gaps += Math.max(0, missing);
      this._localError(ctx, 'sequence_gap', `expected frame ${ctx.nextSequence}, got ${frame.sequence}`);
    }
    ctx.nextSequence = frame.sequence + 1;
    if (ctx.cancelled) return; // in flight when we cancelled: dropped
    ctx.packets += 1;
    const payload = frame.payload.slice(); // own copy: decoders may keep it
    if (ctx.decoder) ctx.decoder.decode(payload);
    else ctx._backlog.push(payload);
  }

  _onContextEvent(ctx, msg) {
    switch (msg.type) {
      case 'started':
        ctx.started = msg;
        ctx.channel = msg.channel;
        this._byChannel.set(msg.channel, ctx);
        if (`${msg.codec}/${msg.sample_rate}` !== ctx.decoderSpec) this._prepareDecoder(ctx, msg.codec, msg.sample_rate);
        ctx.emit('started', msg);
        return;
      case 'done':
        ctx.done = msg;
        ctx.emit('done', msg);
        this._finish(ctx);
        return;
      case 'error': {
        const event = { code: String(msg.code), message: String(msg.message || ''), local: false, contextId: ctx.id };
        ctx.errors.push(event);
        ctx.emit('error', event);
        // A refused start (or one past the limit): no done follows.
        if (!ctx.started) this._fail(ctx, Object.assign(new Error(`${event.code}: ${event.message}`), { code: event.code }));
        return;
      }
      default:
        ctx.emit(msg.type, msg);
    }
  }

  async _finish(ctx) {
    this._release(ctx);
    try {
      if (!ctx.decoder && ctx._decoderPromise) await ctx._decoderPromise.catch(() => {});
      if (ctx.decoder && !ctx.cancelled) await ctx.decoder.flush();
    } catch (err) {
      this._localError(ctx, 'decode_error', String((err && err.message) || err));
    }
    ctx.finished = true;
    if (ctx.decoder) ctx.decoder.close();
    ctx._resolve(ctx.stats);
  }

  _fail(ctx, err) {
    this._release(ctx);
    ctx.finished = true;
    ctx._decoderPromise = null;
    if (ctx.decoder) ctx.decoder.close();
    ctx._reject(err);
  }

  _release(ctx) {
    if (this.contexts.get(ctx.id) === ctx) this.contexts.delete(ctx.id);
    if (ctx.channel !== null && this._byChannel.get(ctx.channel) === ctx) this._byChannel.delete(ctx.channel);
  }

  _localError(ctx, code, message) {
    const event = { code, message, local: true, contextId: ctx.id };
    ctx.errors.push(event);
    ctx.emit('error', event);
  }

  _onClose(ev) {
    this.state = 'closed';
    for (const ctx of [...this.contexts.values()]) {
      this._fail(ctx, Object.assign(new Error(`connection closed (${ev && ev.code})`), { code: 'connection_closed' }));
    }
    this.emit('close', { code: ev && ev.code, reason: ev && ev.reason });
  }
}

export default EmoStreamContexts;
