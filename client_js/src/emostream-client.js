// EmoStreamClient: browser (and node) client for the EmoStream WebSocket protocol v1 at /v1/stream.
//
//   const client = new EmoStreamClient();            // same origin, plays through an AudioWorklet
//   const stats = await client.speak('Hello there!', { voice: 'joe', emotion: 'happy' });
//   // stats = {firstAudioMs, underruns, samplesPlayed, audioMs, ...}
//
//   // LLM tokens as they come:
//   client.start({ voice: 'joe' });
//   for await (const token of llm) client.write(token);
//   const stats2 = await client.end();
//
//   client.cancel();                                  // barge-in: silence at once
//
// Events (client.on(type, fn)): open, close, started, segment, timestamps, words, done, error,
// audio ({samples, sampleRate}: decoded mono float32, valid during the callback only),
// playing ({firstAudioMs}), underrun, stats, message (every JSON event, raw), and with
// start({word_timestamps: true}): word ({word, index, char_start, char_end, start_ms, end_ms}),
// emitted when the playback clock reaches the word's start — the words actually played, not the
// words received (audio arrives ahead of playback). Stats then carry wordsPlayed (played to their
// end; after cancel(): what the listener heard) and wordsSent (the server's done.words_sent).
// With start({mouth: true}) (or the `onMouth` option): mouth ({open, form, viseme, t}: the
// server's mouth shape of the 20 ms frame heard now, by the same playback clock; REST, open 0,
// once the utterance has played), for an avatar's lips (mouth-track.js).

import { Emitter } from './emitter.js';
import { createDecoder as defaultCreateDecoder } from './decoder.js';
import { openSocket, parseServerJson } from './socket.js';
import { AudioPlayer } from './player.js';
import { WordTrack } from './word-track.js';
import { MouthTrack, REST } from './mouth-track.js';
import { START_FIELDS } from './protocol-schema.js';

export { AudioPlayer } from './player.js';
export { createDecoder, webCodecsOpusSupported } from './decoder.js';

export const PROTOCOL_VERSION = 1;
// The start fields passed through from options come from the protocol's schema
// (src/protocol-schema.js, made from the server's protocol.schema.json): none is dropped.
export { START_FIELDS, PROTOCOL_SCHEMA } from './protocol-schema.js';
// The server's Opus encoder look-ahead: a fresh decoder's output lags the stream timeline by it.
// `started` says it as codec_delay_ms; this is for servers that do not.
export const OPUS_LOOKAHEAD_MS = 6.5;
const WORD_TICK_MS = 20; // how often the playback clock is read while words are pending

/** Same-origin URL for `path` (relative to the page), with ws:/wss: scheme. */
export function defaultStreamUrl(path = 'v1/stream') {
  const base = globalThis.document ? globalThis.document.baseURI : globalThis.location && globalThis.location.href;
  if (!base) throw new Error('no page location: pass `url` to EmoStreamClient');
  const u = new URL(path, base);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

/** Error carrying the server's `code`. */
export class EmoStreamError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.name = 'EmoStreamError';
    this.code = code;
    this.serverMessage = message;
  }
}

class Utterance {
  constructor(id, request, t0) {
    this.id = id;
    this.request = request;
    this.t0 = t0;
    this.started = null; // the `started` event
    this.decoder = null;
    this.decoderPromise = null;
    this.backlog = []; // binary frames that arrived before the decoder was ready
    this.packets = 0;
    this.bytes = 0;
    this.samplesDecoded = 0; // at the decoder's output rate
    this.decodedRate = null;
    this.words = new WordTrack();
    this.mouth = new MouthTrack();
    this.firstPacketMs = null;
    this.firstAudioMs = null;
    this.segments = [];
    this.errors = [];
    this.done = null;
    this.ended = false; // client sent `end`
    this.cancelled = false;
    this.cut = false; // its tail was dropped for a new utterance
    this.finished = false;
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.promise.catch(() => {}); // callers that never await must not see unhandled rejections
  }
}

export class EmoStreamClient extends Emitter {
  /**
   * @param {object} [options]
   * @param {string} [options.url] ws(s)://host/v1/stream; default: same origin as the page
   * @param {typeof WebSocket} [options.WebSocket=globalThis.WebSocket] inject for tests / node
   * @param {AudioPlayer|null|'auto'} [options.player='auto'] 'auto' makes an AudioPlayer where
   *   AudioContext exists; null means no playback (decode only: 'audio' events)
   * @param {object} [options.playerOptions] options for the auto-made AudioPlayer
   * @param {'auto'|'webcodecs'|'wasm'} [options.decoder='auto'] 'wasm' forces the opus-decoder fallback
   * @param {string} [options.wasmUrl] location of the vendored opus-decoder bundle
   * @param {Function} [options.OpusDecoderClass] inject the wasm OpusDecoder class (node)
   * @param {{codec: 'opus'|'pcm_s16le', sample_rate: number}} [options.format] default output format
   * @param {object} [options.defaults] default start fields (voice, emotion, speed, ...)
   * @param {() => number} [options.now] clock in ms (performance.now)
   * @param {Function} [options.createDecoder] inject a decoder factory (tests)
   * @param {(frame: object) => void} [options.onMouth] mouth shapes as they are heard: asks
   *   every utterance for them (start field mouth) and listens to the `mouth` event
   */
  constructor({
    url,
    WebSocket: WS = globalThis.WebSocket,
    player = 'auto',
    playerOptions = {},
    decoder = 'auto',
    wasmUrl,
    OpusDecoderClass,
    format = { codec: 'opus', sample_rate: 48000 },
    defaults = {},
    now = () => globalThis.performance.now(),
    createDecoder = defaultCreateDecoder,
    onMouth,
  } = {}) {
    super();
    this.url = url || defaultStreamUrl();
    this._WS = WS;
    if (player === 'auto') {
      player = typeof globalThis.AudioContext === 'function' ? new AudioPlayer(playerOptions) : null;
    }
    /** @type {AudioPlayer|null} */
    this.player = player;
    this.decoderPreference = decoder;
    this.wasmUrl = wasmUrl;
    this.OpusDecoderClass = OpusDecoderClass;
    this.format = { ...format };
    this.defaults = onMouth ? { mouth: true, ...defaults } : { ...defaults };
    if (onMouth) this.on('mouth', onMouth);
    this.now = now;
    this._createDecoder = createDecoder;
    /** @type {'closed'|'connecting'|'idle'|'starting'|'streaming'|'ending'|'cancelling'} */
    this.state = 'closed';
    this.ws = null;
    this._utt = null; // utterance between start and done
    this._draining = null; // utterance after done whose audio is still playing
    this._nextId = 1;
    this._swallowNotStarted = false;
    this._wordTimer = null;
    this.lastStats = null;
    if (this.player) this._wirePlayer(this.player);
  }

  // ---------------------------------------------------------------- connection
  /** Open the WebSocket (and prepare the audio player). Resolves when connected. */
  async open() {
    if (this.ws && (this.state !== 'closed')) return this._opening;
    this._opening = openSocket(this, 'idle');
    const ready = [this._opening];
    if (this.player) ready.push(this.player.init());
    await Promise.all(ready);
  }

  close() {
    if (this.ws) this.ws.close();
  }

  get connected() {
    return this.ws !== null && this.state !== 'closed' && this.state !== 'connecting';
  }

  /** True from start() until the utterance has finished playing (or was cancelled). */
  get busy() {
    return this._utt !== null || this._draining !== null;
  }

  _send(msg) {
    if (!this.connected) throw new Error('EmoStreamClient is not connected: await open() first');
    this.ws.send(JSON.stringify(msg));
  }

  // ---------------------------------------------------------------- requests
  /**
   * Begin an utterance. Returns a promise for its stats (resolves after `done` and, with a
   * player, after the audio has finished playing; rejects on a start error or a lost connection).
   * @param {object} [options] any start field of the protocol schema (START_FIELDS: voice,
   *   emotion, intensity, speed, pitch_shift, energy, prompt, cache, timestamps, word_timestamps,
   *   reference_audio, ...), and format: {codec, sample_rate}
   */
  start(options = {}) {
    if (this._utt) throw new Error('an utterance is in progress: end() or cancel() it first');
    const opts = { ...this.defaults, ...options };
    const msg = { type: 'start' };
    for (const key of START_FIELDS) if (opts[key] !== undefined && opts[key] !== null) msg[key] = opts[key];
    msg.format = { ...this.format, ...(opts.format || {}) };
    // A new utterance replaces the tail of the previous one still playing.
    if (this._draining) {
      this._advanceWords(this._draining);
      this._draining.cut = true;
      this._resolve(this._draining);
    }
    const utt = new Utterance(this._nextId++, msg, this.now());
    this._utt = utt;
    this._swallowNotStarted = false;
    if (this.player && this.player.node) this.player.begin();
    // Build the decoder for the requested format now, so it is ready when audio arrives.
    this._prepareDecoder(utt, msg.format.codec, msg.format.sample_rate);
    this.state = 'starting';
    this._send(msg);
    return utt.promise;
  }

  /** Send text for the current utterance. */
  text(text) {
    this._requireOpenUtterance('text');
    this._send({ type: 'text', text: String(text) });
  }

  /**
   * Feed text incrementally (e.g. LLM tokens): a string or an iterable of strings. Starts an
   * utterance with `options` (or the defaults) when none is open.
   */
  write(tokens, options) {
    if (!this._utt) this.start(options);
    const list = typeof tokens === 'string' ? [tokens] : tokens;
    for (const t of list) if (t !== '') this.text(t);
  }

  /** Speak buffered text now, without waiting for a sentence boundary. */
  flush() {
    this._requireOpenUtterance('flush');
    this._send({ type: 'flush' });
  }

  /** No more text. Returns the utterance's stats promise. */
  end() {
    this._requireOpenUtterance('end');
    const utt = this._utt;
    utt.ended = true;
    if (this.state === 'streaming' || this.state === 'starting') this.state = 'ending';
    this._send({ type: 'end' });
    return utt.promise;
  }

  /** Barge-in: silence now, drop queued audio, ask the server to stop. Returns the stats promise. */
  cancel() {
    const draining = this._draining;
    if (draining) {
      // done already came; its audio is still playing: cut it.
      this._advanceWords(draining);
      draining.cancelled = true;
      if (this.player && this.player.node) this.player.clear();
      this._resolve(draining);
    }
    const utt = this._utt;
    if (!utt) return draining ? draining.promise : Promise.resolve(this.lastStats);
    if (!utt.cancelled) {
      this._advanceWords(utt); // the words heard up to the cut
      utt.cancelled = true;
      utt.backlog = [];
      if (this.player && this.player.node) this.player.clear();
      if (utt.decoder) utt.decoder.reset();
      this.state = 'cancelling';
      if (this.connected) this._send({ type: 'cancel' });
    }
    return utt.promise;
  }

  /**
   * Speak `text` in one go: start, text, end. Resolves with the stats once it has played.
   * @param {string} text
   * @param {object} [options] as for start()
   */
  async speak(text, options = {}) {
    if (!this.connected) await this.open();
    if (this.player) await this.player.resume();
    const promise = this.start(options);
    this.text(text);
    this.end();
    return promise;
  }

  _requireOpenUtterance(what) {
    const utt = this._utt;
    if (!utt) throw new Error(`${what}() with no utterance: call start() first`);
    if (utt.ended) throw new Error(`${what}() after end()`);
    if (utt.cancelled) throw new Error(`${what}() after cancel()`);
  }

  // ---------------------------------------------------------------- decoding
  _prepareDecoder(utt, codec, sampleRate) {
    const outputRate = this.player ? this.player.sampleRate : sampleRate;
    utt.decoderSpec = `${codec}/${sampleRate}`;
    utt.decoder = null;
    const promise = this._createDecoder({
      codec,
      sampleRate,
      outputRate: codec === 'opus' ? outputRate : sampleRate,
      prefer: this.decoderPreference,
      wasmUrl: this.wasmUrl,
      OpusDecoderClass: this.OpusDecoderClass,
      onSamples: (samples, rate) => this._onSamples(utt, samples, rate),
      onError: (err) => this._localError(utt, 'decode_error', String((err && err.message) || err)),
    });
    utt.decoderPromise = promise;
    promise.then(
      (dec) => {
        if (utt.decoderPromise !== promise) {
          dec.close();
          return;
        }
        utt.decoder = dec;
        const backlog = utt.backlog;
        utt.backlog = [];
        for (const bytes of backlog) this._decode(utt, bytes);
      },
      (err) => {
        if (utt.decoderPromise === promise) this._fail(utt, new EmoStreamError('decoder_unavailable', String(err.message || err)));
      },
    );
  }

  _decode(utt, bytes) {
    try {
      utt.decoder.decode(bytes);
    } catch (err) {
      this._localError(utt, 'decode_error', String((err && err.message) || err));
    }
  }

  _onSamples(utt, samples, rate) {
    if (utt.cancelled || utt.finished) return;
    const player = this.player;
    utt.samplesDecoded += samples.length; // at the decoder's output rate
    utt.decodedRate = rate;
    if (!player && utt.firstAudioMs === null) {
      utt.firstAudioMs = this.now() - utt.t0;
      this.emit('playing', { firstAudioMs: utt.firstAudioMs });
    }
    this.emit('audio', { samples, sampleRate: rate });
    if (player && player.node) player.push(samples, rate);
  }

  // ---------------------------------------------------------------- player events
  _wirePlayer(player) {
    player.on('playing', (ev) => {
      const utt = this._utt || this._draining;
      if (!utt || ev.resumed || utt.firstAudioMs !== null) return;
      utt.firstAudioMs = this.now() - utt.t0;
      this.emit('playing', { firstAudioMs: utt.firstAudioMs });
    });
    player.on('underrun', (ev) => this.emit('underrun', ev));
    player.on('stats', (ev) => this.emit('stats', ev));
    player.on('drained', () => {
      const utt = this._draining;
      if (utt) this._resolve(utt);
    });
  }

  // ---------------------------------------------------------------- incoming
  _onMessage(data) {
    if (typeof data === 'string') {
      const msg = parseServerJson(this, data);
      if (msg !== null) this._onEvent(msg);
      return;
    }
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    this._onAudio(bytes);
  }

  _onAudio(bytes) {
    const utt = this._utt;
    if (!utt || utt.cancelled) return; // late audio of a cancelled utterance: drop
    if (!utt.started) {
      this._localError(utt, 'protocol', 'audio before started: dropped');
      return;
    }
    utt.packets += 1;
    utt.bytes += bytes.length;
    if (utt.firstPacketMs === null) utt.firstPacketMs = this.now() - utt.t0;
    if (utt.decoder) this._decode(utt, bytes);
    else utt.backlog.push(bytes);
  }

  _onEvent(msg) {
    this.emit('message', msg);
    const utt = this._utt;
    switch (msg.type) {
      case 'started':
        if (!utt || utt.started) return;
        utt.started = msg;
        if (this.state === 'starting') this.state = 'streaming';
        if (`${msg.codec}/${msg.sample_rate}` !== utt.decoderSpec) {
          this._prepareDecoder(utt, msg.codec, msg.sample_rate);
        }
        this.emit('started', msg);
        return;
      case 'segment':
        if (utt) utt.segments.push(msg);
        this.emit('segment', msg);
        return;
      case 'timestamps':
        this.emit('timestamps', msg);
        return;
      case 'words':
        if (utt && !utt.cancelled) {
          utt.words.add(msg.words);
          this._startWordClock();
        }
        this.emit('words', msg);
        return;
      case 'mouth':
        if (utt && !utt.cancelled) {
          utt.mouth.add(msg);
          this._startWordClock();
        }
        return;
      case 'done':
        if (!utt) return;
        utt.done = msg;
        this.emit('done', msg);
        this._finish(utt);
        return;
      case 'error':
        this._onServerError(utt, msg);
        return;
      default:
        return; // unknown event types are ignored (forward compatibility)
    }
  }

  _onServerError(utt, msg) {
    const code = String(msg.code || 'error');
    const event = { code, message: String(msg.message || ''), local: false };
    if (utt && !utt.started && !utt.cancelled) {
      // The start was refused (unknown voice, bad format, ...): no `done` will come. The text and
      // end we pipelined behind it come back as not_started errors; those are expected noise.
      this._swallowNotStarted = true;
      this.emit('error', event);
      this._fail(utt, new EmoStreamError(code, event.message));
      return;
    }
    if (!utt && this._swallowNotStarted && (code === 'not_started' || code === 'already_ended')) return;
    if (utt) utt.errors.push(event);
    this.emit('error', event);
  }

  _localError(utt, code, message) {
    const event = { code, message, local: true };
    if (utt) utt.errors.push(event);
    this.emit('error', event);
  }

  async _finish(utt) {
    // Server is done with this utterance: the connection takes a new start right away.
    this._utt = null;
    if (this.state !== 'closed') this.state = 'idle';
    if (utt.cancelled || utt.done.cancelled) {
      if (!utt.cancelled) this._advanceWords(utt);
      if (!utt.cancelled && this.player && this.player.node) this.player.clear();
      this._resolve(utt);
      return;
    }
    // Let everything still in the decoder reach the player, then let the player drain.
    this._draining = utt;
    try {
      if (!utt.decoder && utt.decoderPromise) await utt.decoderPromise.catch(() => {});
      if (utt.decoder) await utt.decoder.flush();
    } catch (err) {
      this._localError(utt, 'decode_error', String((err && err.message) || err));
    }
    const player = this.player;
    if (player && player.node && utt.samplesDecoded > 0 && this._draining === utt) {
      player.end(); // `drained` resolves it
    } else {
      this._resolve(utt);
    }
  }

  // ---------------------------------------------------------------- word clock
  /** Position of the audio played so far on the stream's timeline, in ms. */
  _playedMs(utt) {
    const player = this.player;
    let ms;
    if (player && player.node) {
      const pos = typeof player.positionSamples === 'function' ? player.positionSamples() : player.stats.samplesPlayed;
      ms = (pos / player.sampleRate) * 1000;
    } else {
      const rate = utt.decodedRate || (utt.started && utt.started.sample_rate) || 48000;
      ms = (utt.samplesDecoded / rate) * 1000; // decode only: decoded counts as played
    }
    if (utt.started && typeof utt.started.codec_delay_ms === 'number') ms -= utt.started.codec_delay_ms;
    else if (utt.started && utt.started.codec === 'opus') ms -= OPUS_LOOKAHEAD_MS;
    return ms;
  }

  /** Emit `word` for every word whose start the playback clock has reached (and `mouth` for
   * the frame heard now; REST once it has all played, or at a cut). */
  _advanceWords(utt, positionMs = this._playedMs(utt)) {
    if (utt.cancelled || utt.finished) return;
    for (const word of utt.words.advance(positionMs)) this.emit('word', word);
    const frame = utt.mouth.advance(positionMs);
    if (frame) this.emit('mouth', frame);
  }

  /** The utterance is over (played, cut or failed): a mouth that moved comes to rest. */
  _restMouth(utt) {
    if (utt.mouth.current === null || utt.mouth.current === REST) return;
    utt.mouth.current = REST;
    this.emit('mouth', REST);
  }

  _startWordClock() {
    if (this._wordTimer !== null) return;
    this._wordTimer = setInterval(() => {
      const utt = this._utt || this._draining;
      if (!utt) {
        this._stopWordClock();
        return;
      }
      this._advanceWords(utt);
    }, WORD_TICK_MS);
    if (typeof this._wordTimer.unref === 'function') this._wordTimer.unref(); // node: no hold on exit
  }

  _stopWordClock() {
    if (this._wordTimer === null) return;
    clearInterval(this._wordTimer);
    this._wordTimer = null;
  }

  _stats(utt) {
    const done = utt.done || {};
    const player = this.player;
    const rate = player ? player.sampleRate : (utt.started && utt.started.sample_rate) || null;
    return {
      firstAudioMs: utt.firstAudioMs,
      firstPacketMs: utt.firstPacketMs,
      underruns: player ? player.stats.underruns : 0,
      samplesPlayed: player ? player.stats.samplesPlayed : 0,
      // With a player: samples handed to it (at its rate, after any resampling).
      samplesDecoded: player ? player.samplesPushed : utt.samplesDecoded,
      sampleRate: rate,
      audioMs: typeof done.audio_ms === 'number' ? done.audio_ms : null,
      serverFirstAudioMs: typeof done.first_audio_ms === 'number' ? done.first_audio_ms : null,
      rtf: typeof done.rtf === 'number' ? done.rtf : null,
      packets: utt.packets,
      bytes: utt.bytes,
      segments: utt.segments.length,
      decoder: utt.decoder ? utt.decoder.kind : null,
      streamId: utt.started ? utt.started.stream_id : null,
      cancelled: Boolean(utt.cancelled || done.cancelled),
      errors: utt.errors.slice(),
      // With word timestamps: words played to their end (by the playback clock), and the
      // server's words within the audio it sent (null when it did not say).
      wordsPlayed: utt.words.played(),
      wordsSent: Array.isArray(done.words_sent) ? done.words_sent : null,
    };
  }

  _resolve(utt) {
    if (utt.finished) return;
    // Played out (drained, or decode only): every word was heard. Cut short (cancel, a new
    // start, the server's cancel): the words stopped where the clock was at the cut.
    if (!utt.cancelled && !utt.cut && !(utt.done && utt.done.cancelled)) this._advanceWords(utt, Infinity);
    this._restMouth(utt);
    utt.finished = true;
    if (this._draining === utt) this._draining = null;
    if (!this._utt && !this._draining) this._stopWordClock();
    if (utt.decoder) utt.decoder.close();
    const stats = this._stats(utt);
    this.lastStats = stats;
    utt.resolve(stats);
  }

  _fail(utt, err) {
    if (utt.finished) return;
    this._restMouth(utt);
    utt.finished = true;
    if (!this._utt || this._utt === utt) this._stopWordClock();
    if (this._utt === utt) {
      this._utt = null;
      if (this.state !== 'closed') this.state = 'idle';
    }
    if (this._draining === utt) this._draining = null;
    utt.decoderPromise = null;
    if (utt.decoder) utt.decoder.close();
    if (this.player && this.player.node) this.player.clear();
    this.lastStats = this._stats(utt);
    utt.reject(err);
  }

  _onClose(ev) {
    this.state = 'closed';
    const utt = this._utt;
    if (utt) this._fail(utt, new EmoStreamError('connection_closed', `connection closed (${ev && ev.code})`));
    this.emit('close', { code: ev && ev.code, reason: ev && ev.reason });
  }
}

export default EmoStreamClient;
