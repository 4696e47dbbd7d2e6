// RoomListener: plays a room (docs/protocol.md, "Rooms") — the audio that a publisher's
// utterances send into it, heard by any number of listeners from one synthesis.
//
//   const room = new RoomListener({ room: 'main', token });   // ws(s)://<page host>/v1/rooms/main/listen
//   room.on('word', (w) => ...);     // each word when it is heard (captions)
//   room.on('mouth', (f) => ...);    // {open, form, viseme, t} when its 20 ms frame is heard
//   await room.open();               // reconnects by itself until close()
//
// Utterances play back to back on one timeline through the client's AudioPlayer (the same
// decoders, AudioWorklet ring buffer and pre-buffer as EmoStreamClient): each utterance's audio
// goes to the player only once the one before it is decoded to its end, and the player is
// reopened for it (jitter-buffer.js: the silence between two utterances is not an underrun).
// Words and mouth shapes are stamped on the utterance's own timeline; the clock that releases
// them is the player's audible position (AudioPlayer.audibleSamples: what the listener hears
// now, output latency included) less the utterance's start on the player's timeline and the
// codec delay. A `done` with `superseded` (a newer utterance took the room) silences the older
// one at once.
//
// Events: open, close, room, started, segment, words, word, mouth, done, queue, error
// ({code, message}; room_refused and too_many_listeners stop the reconnecting), underrun,
// playing ({utterance, base, delayMs}: its first audio goes to the player, at `base` samples on
// the player's timeline).

import { Emitter } from './emitter.js';
import { openSocket, parseServerJson } from './socket.js';
import { createDecoder as defaultCreateDecoder } from './decoder.js';
import { AudioPlayer } from './player.js';
import { WordTrack } from './word-track.js';
import { MouthTrack, REST } from './mouth-track.js';

const TICK_MS = 5; // how often the clock is read while something is to be released
const REFUSALS = new Set(['room_refused', 'too_many_listeners']);

/** ws(s):// URL of a room's listener socket on the page's server. */
export function roomUrl(room, token, base = globalThis.document && globalThis.document.baseURI) {
  const u = new URL(`v1/rooms/${encodeURIComponent(room)}/listen`, base);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.searchParams.set('token', token);
  return u.href;
}

class RoomUtterance {
  constructor(started, previous) {
    this.started = started;
    this.id = started.utterance;
    this.delayMs = typeof started.codec_delay_ms === 'number' ? started.codec_delay_ms : 0;
    this.decoder = null;
    this.decoderPromise = null;
    this.backlog = []; // frames before the decoder is ready
    this.held = []; // decoded samples waiting for the previous utterance to finish decoding
    this.base = null; // its first sample on the player's timeline, once pushed
    this.pushed = 0; // its samples pushed to the player (at the player's rate)
    this.flushed = false; // done, and decoded to its end
    this.words = new WordTrack();
    this.mouth = new MouthTrack();
    this.packets = 0;
    this.samples = 0;
    this.done = null;
    this.stopped = false; // superseded, or the connection lost: its audio is dropped
    // Decoded to its end (its done came and its decoder flushed).
    this.finished = new Promise((resolve) => {
      this.finish = resolve;
    });
    this.ready = previous ? previous.finished : Promise.resolve();
    this.open = !previous;
    if (previous) this.ready.then(() => { this.open = true; });
  }
}

export class RoomListener extends Emitter {
  /**
   * @param {object} options
   * @param {string} [options.room] the room's name (with token; or give url)
   * @param {string} [options.token]
   * @param {string} [options.url] ws(s)://host/v1/rooms/NAME/listen?token=...
   * @param {typeof WebSocket} [options.WebSocket=globalThis.WebSocket]
   * @param {AudioPlayer|null|'auto'} [options.player='auto'] null: decode only (no playback)
   * @param {object} [options.playerOptions]
   * @param {'auto'|'webcodecs'|'wasm'} [options.decoder='auto']
   * @param {Function} [options.createDecoder] inject a decoder factory (tests)
   * @param {boolean} [options.reconnect=true]
   * @param {() => number} [options.now] clock in ms (performance.now)
   */
  constructor({
    room, token, url, WebSocket: WS = globalThis.WebSocket, player = 'auto', playerOptions = {},
    decoder = 'auto', createDecoder = defaultCreateDecoder, reconnect = true,
    now = () => globalThis.performance.now(),
  } = {}) {
    super();
    this.url = url || roomUrl(room, token);
    this._WS = WS;
    if (player === 'auto') {
      player = typeof globalThis.AudioContext === 'function' ? new AudioPlayer(playerOptions) : null;
    }
    this.player = player;
    this.decoderPreference = decoder;
    this._createDecoder = createDecoder;
    this.reconnect = reconnect;
    this.now = now;
    this.ws = null;
    this.state = 'closed';
    this.refused = null; // the refusal that stopped reconnecting
    this._current = null; // the utterance the room is sending
    this._live = []; // utterances whose words or mouth shapes are still to be released
    this._last = null; // the last utterance that was given audio (the chain's tail)
    this._begun = false; // the player's timeline has begun
    this._timer = null;
    this._retry = null;
    this._backoffMs = 500;
    this._closing = false;
    this.stats = { utterances: 0, packets: 0, samplesDecoded: 0, underruns: 0 };
    if (this.player) {
      this.player.on('underrun', (ev) => {
        this.stats.underruns = ev.underruns;
        this.emit('underrun', ev);
      });
    }
  }

  /** Connect (and prepare the player); resolves once the socket is open. */
  async open() {
    this._closing = false;
    const ready = [this._connect()];
    if (this.player) ready.push(this.player.init());
    await Promise.all(ready);
  }

  close() {
    this._closing = true;
    clearTimeout(this._retry);
    if (this.ws) this.ws.close();
  }

  async _connect() {
    await openSocket(this, 'open');
    this._backoffMs = 500;
  }

  _onClose(ev) {
    this.state = 'closed';
    if (this._current) this._stop(this._current);
    this._current = null;
    this.emit('close', { code: ev && ev.code, reason: ev && ev.reason });
    if (this._closing || this.refused || !this.reconnect) return;
    const wait = this._backoffMs;
    this._backoffMs = Math.min(this._backoffMs * 2, 10000);
    this._retry = setTimeout(() => this._connect().catch(() => {}), wait);
  }

  // ------------------------------------------------------------------------ incoming
  _onMessage(data) {
    if (typeof data !== 'string') {
      this._onAudio(data instanceof Uint8Array ? data : new Uint8Array(data));
      return;
    }
    const msg = parseServerJson(this, data);
    if (msg === null) return;
    const utt = this._current;
    switch (msg.type) {
      case 'room':
      case 'queue':
      case 'segment':
        this.emit(msg.type, msg);
        return;
      case 'started':
        this._onStarted(msg);
        return;
      case 'words':
        if (utt) {
          utt.words.add(msg.words);
          this._tick();
        }
        this.emit('words', msg);
        return;
      case 'mouth':
        if (utt) {
          utt.mouth.add(msg);
          this._tick();
        }
        return;
      case 'done':
        if (utt) this._onDone(utt, msg);
        return;
      case 'error':
        if (REFUSALS.has(msg.code)) this.refused = msg;
        this.emit('error', { code: msg.code, message: msg.message, local: false });
        return;
      default:
    }
  }

  _onStarted(msg) {
    if (this._current) this._stop(this._current);
    const utt = new RoomUtterance(msg, this._last);
    this._current = utt;
    this._last = utt;
    this._live.push(utt);
    this.stats.utterances += 1;
    const outputRate = this.player ? this.player.sampleRate : msg.sample_rate;
    const promise = this._createDecoder({
      codec: msg.codec,
      sampleRate: msg.sample_rate,
      outputRate: msg.codec === 'opus' ? outputRate : msg.sample_rate,
      prefer: this.decoderPreference,
      onSamples: (samples, rate) => this._onSamples(utt, samples, rate),
      onError: (err) => this.emit('error', { code: 'decode_error', message: String((err && err.message) || err), local: true }),
    });
    utt.decoderPromise = promise;
    promise.then((dec) => {
      if (utt.stopped) {
        dec.close();
        return;
      }
      utt.decoder = dec;
      for (const bytes of utt.backlog) dec.decode(bytes);
      utt.backlog = [];
    }, (err) => this.emit('error', { code: 'decoder_unavailable', message: String(err.message || err), local: true }));
    utt.ready.then(() => this._release(utt));
    this.emit('started', msg);
  }

  _onAudio(bytes) {
    const utt = this._current;
    if (!utt || utt.stopped || utt.done) return; // a room sends audio only between started and done
    utt.packets += 1;
    this.stats.packets += 1;
    if (utt.decoder) utt.decoder.decode(bytes);
    else utt.backlog.push(bytes);
  }

  _onSamples(utt, samples, rate) {
    if (utt.stopped) return;
    utt.samples += samples.length;
    this.stats.samplesDecoded += samples.length;
    if (!utt.open) {
      utt.held.push([samples.slice(), rate]); // the buffer may be reused after the callback
      return;
    }
    this._push(utt, samples, rate);
  }

  /** The previous utterance is decoded to its end: this one's held audio goes to the player. */
  _release(utt) {
    if (utt.stopped) return;
    const held = utt.held;
    utt.held = [];
    for (const [samples, rate] of held) this._push(utt, samples, rate);
  }

  _push(utt, samples, rate) {
    const player = this.player;
    if (utt.base === null) {
      if (player && player.node) {
        if (!this._begun) {
          player.begin();
          this._begun = true;
        } else {
          player.reopen();
        }
        utt.base = player.samplesPushed;
      } else {
        utt.base = 0;
      }
      this.emit('playing', { utterance: utt.id, base: utt.base, delayMs: utt.delayMs });
      this._tick();
    }
    if (player && player.node) {
      const before = player.samplesPushed;
      player.push(samples, rate);
      utt.pushed += player.samplesPushed - before;
    }
  }

  async _onDone(utt, msg) {
    utt.done = msg;
    this._current = null;
    this.emit('done', msg);
    if (msg.cancelled) {
      this._stop(utt);
      return;
    }
    try {
      if (!utt.decoder && utt.decoderPromise) await utt.decoderPromise.catch(() => {});
      if (utt.decoder) await utt.decoder.flush();
    } catch (err) {
      this.emit('error', { code: 'decode_error', message: String((err && err.message) || err), local: true });
    }
    if (!utt.open) await utt.ready;
    if (!utt.stopped && utt.base !== null && this.player && this.player.node) {
      // Its audio is all pushed (the next one's waits for this): the player may drain, and the
      // next utterance's first audio reopens it; the silence between them is no underrun.
      this.player.end();
    }
    if (utt.decoder) utt.decoder.close();
    utt.flushed = true;
    utt.finish();
    this._tick();
  }

  /** Silence an utterance now (a newer one took the room, or the connection dropped). */
  _stop(utt) {
    if (utt.stopped) return;
    utt.stopped = true;
    utt.held = [];
    utt.backlog = [];
    if (utt.decoder) utt.decoder.close();
    if (utt.base !== null && this.player && this.player.node) {
      this.player.clear();
      this._begun = false; // the next utterance begins a new timeline
    }
    this._live = this._live.filter((u) => u !== utt);
    if (this._last === utt) this._last = null;
    utt.finish();
    if (utt.mouth.current && utt.mouth.current !== REST) this.emit('mouth', REST);
  }

  // ------------------------------------------------------------------------ the clock
  /** Where `utt` is heard now on its own timeline, ms (null before its audio plays; Infinity
   * once all of it has been heard). */
  positionMs(utt) {
    if (utt.base === null) return null;
    const player = this.player;
    let samples;
    let rate;
    if (player && player.node) {
      samples = player.audibleSamples(this.now()) - utt.base;
      rate = player.sampleRate;
      if (utt.flushed && samples >= utt.pushed) return Infinity;
    } else {
      if (utt.flushed) return Infinity;
      samples = utt.samples; // decode only: decoded counts as heard
      rate = utt.started.sample_rate;
    }
    return (samples / rate) * 1000 - utt.delayMs;
  }

  _tick() {
    if (this._timer !== null) return;
    this._timer = setTimeout(() => {
      this._timer = null;
      this._advance();
    }, 0);
  }

  _advance() {
    for (const utt of [...this._live]) {
      const pos = this.positionMs(utt);
      if (pos === null) continue;
      for (const word of utt.words.advance(pos)) this.emit('word', { ...word, utterance: utt.id });
      const frame = utt.mouth.advance(pos);
      if (frame) this.emit('mouth', { ...frame, utterance: utt.id });
      // Done, and heard to its end (the mouth at rest): nothing of it is left to release.
      const last = utt.words.words[utt.words.words.length - 1];
      const end = Math.max(utt.mouth.end, last ? last.end_ms : 0);
      if (utt.done && pos >= end) this._live = this._live.filter((u) => u !== utt);
    }
    if (this._live.length > 0) {
      this._timer = setTimeout(() => {
        this._timer = null;
        this._advance();
      }, TICK_MS);
      if (typeof this._timer.unref === 'function') this._timer.unref(); // node: no hold on exit
    }
  }
}

export default RoomListener;
