// Main-thread side of playback: one AudioContext (48 kHz, latencyHint 'interactive'),
// one AudioWorkletNode running player-worklet.js (a ring buffer with a small pre-buffer),
// and an AnalyserNode for drawing. Samples are posted to the worklet (transferred, not
// copied); no AudioBufferSourceNode chaining, so there are no gaps between packets.

import { Emitter } from './emitter.js';
import { LinearResampler } from './resampler.js';

export const WORKLET_URL = new URL('./player-worklet.js', import.meta.url).href;

export class AudioPlayer extends Emitter {
  /**
   * @param {object} [options]
   * @param {AudioContext} [options.audioContext] share an existing context (its rate is used)
   * @param {number} [options.sampleRate=48000]
   * @param {AudioContextLatencyCategory|number} [options.latencyHint='interactive']
   * @param {number} [options.prebufferMs=60] initial pre-buffer (<= 60 ms advised)
   * @param {number} [options.growMs=40] pre-buffer growth after an underrun
   * @param {number} [options.maxPrebufferMs=300]
   * @param {string} [options.workletUrl]
   */
  constructor({
    audioContext,
    sampleRate = 48000,
    latencyHint = 'interactive',
    prebufferMs = 60,
    growMs = 40,
    maxPrebufferMs = 300,
    workletUrl = WORKLET_URL,
  } = {}) {
    super();
    this.options = { sampleRate, latencyHint, prebufferMs, growMs, maxPrebufferMs, workletUrl };
    this.context = audioContext || null;
    this.node = null;
    this.analyser = null;
    this.stats = { samplesPlayed: 0, buffered: 0, underruns: 0, prebufferMs, state: 'idle' };
    this.samplesPushed = 0;
    this._resampler = null;
    this._ready = null;
    this._gen = 0;
    this._at = null; // {frame, played}: the worklet's last report, for positionSamples()
  }

  get sampleRate() {
    return this.context ? this.context.sampleRate : this.options.sampleRate;
  }

  /** Create the context and load the worklet (idempotent). Call from a user gesture if you can. */
  init() {
    if (!this._ready) this._ready = this._init();
    return this._ready;
  }

  async _init() {
    const o = this.options;
    if (!this.context) {
      this.context = new AudioContext({ sampleRate: o.sampleRate, latencyHint: o.latencyHint });
    }
    await this.context.audioWorklet.addModule(o.workletUrl);
    this.node = new AudioWorkletNode(this.context, 'emostream-player', {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: { prebufferMs: o.prebufferMs, growMs: o.growMs, maxPrebufferMs: o.maxPrebufferMs },
    });
    this.analyser = this.context.createAnalyser();
    this.analyser.fftSize = 2048;
    this.node.connect(this.analyser);
    this.analyser.connect(this.context.destination);
    this.node.port.onmessage = (event) => this._onWorkletMessage(event.data);
  }

  /** Resume the context if the autoplay policy suspended it. */
  async resume() {
    await this.init();
    if (this.context.state !== 'running') await this.context.resume();
  }

  _onWorkletMessage(msg) {
    if (msg.gen !== this._gen) return; // from an utterance that was replaced or cleared
    if (typeof msg.samplesPlayed === 'number') {
      this.stats.samplesPlayed = msg.samplesPlayed;
      if (typeof msg.frame === 'number') this._at = { frame: msg.frame, played: msg.samplesPlayed };
    }
    if (typeof msg.underruns === 'number') this.stats.underruns = msg.underruns;
    if (typeof msg.prebufferMs === 'number') this.stats.prebufferMs = msg.prebufferMs;
    if (typeof msg.buffered === 'number') this.stats.buffered = msg.buffered;
    if (msg.type === 'playing') this.stats.state = 'playing';
    if (msg.type === 'underrun') this.stats.state = 'buffering';
    if (msg.type === 'drained') {
      this.stats.state = 'idle';
      this.stats.buffered = 0;
    }
    if (msg.type === 'stats') this.stats.state = msg.state;
    this.emit(msg.type, msg);
  }

  _post(msg, transfer) {
    if (!this.node) throw new Error('AudioPlayer.init() has not completed');
    this.node.port.postMessage(msg, transfer || []);
  }

  /**
   * Samples of this utterance played so far, between the worklet's reports too: the last report
   * plus the context frames rendered since (while playing), less the output latency; never more
   * than was pushed. The clock for word timestamps.
   */
  positionSamples() {
    const ctx = this.context;
    let pos = this.stats.samplesPlayed;
    const at = this._at;
    if (ctx && at && this.stats.state === 'playing') {
      const now = Math.round(ctx.currentTime * ctx.sampleRate);
      pos = Math.max(pos, at.played + Math.max(0, now - at.frame - 128)); // 128: one render quantum
    }
    const latency = ctx && ctx.outputLatency ? Math.round(ctx.outputLatency * ctx.sampleRate) : 0;
    return Math.max(0, Math.min(pos, this.samplesPushed) - latency);
  }

  /** Start a new utterance (empties the buffer, resets per-utterance counters). */
  begin() {
    this._at = null;
    this.samplesPushed = 0;
    this._resampler = null;
    this.stats = { ...this.stats, samplesPlayed: 0, buffered: 0, underruns: 0, state: 'buffering' };
    this._gen += 1;
    this._post({ type: 'begin', gen: this._gen });
  }

  /**
   * Queue mono samples; resampled (linear) if `rate` differs from the context's.
   * @param {Float32Array} samples
   * @param {number} [rate]
   */
  push(samples, rate = this.sampleRate) {
    let s = samples;
    if (rate !== this.sampleRate) {
      if (!this._resampler || this._resampler.inputRate !== rate) {
        this._resampler = new LinearResampler(rate, this.sampleRate);
      }
      s = this._resampler.process(samples);
    }
    if (s.length === 0) return;
    // The buffer is transferred to the worklet: never detach a caller's larger buffer.
    if (s.byteOffset !== 0 || s.byteLength !== s.buffer.byteLength) s = s.slice();
    this.samplesPushed += s.length;
    this._post({ type: 'push', samples: s }, [s.buffer]);
  }

  /**
   * More audio after end(), on the same timeline: samplesPlayed and samplesPushed go on (a
   * room's next utterance, played back to back). Call before pushing it.
   */
  reopen() {
    this._resampler = null;
    if (this.stats.state === 'idle') this.stats.state = 'buffering';
    this._post({ type: 'reopen' });
  }

  /**
   * Where the listener is now on this timeline, in samples: the worklet's last report moved on
   * by the context frames that became audible since (AudioContext.getOutputTimestamp: the
   * output latency included), never past what was pushed. Like positionSamples(), for clocks
   * that must match what is heard (mouth shapes); falls back to it where getOutputTimestamp
   * is missing.
   */
  audibleSamples(nowMs = globalThis.performance.now()) {
    const ctx = this.context;
    const at = this._at;
    if (!ctx || typeof ctx.getOutputTimestamp !== 'function') return this.positionSamples();
    if (!at || this.stats.state !== 'playing') return Math.min(this.stats.samplesPlayed, this.samplesPushed);
    const ts = ctx.getOutputTimestamp();
    if (!ts || !ts.performanceTime) return this.positionSamples();
    const audible = (ts.contextTime + (nowMs - ts.performanceTime) / 1000) * ctx.sampleRate;
    // A report's samplesPlayed includes its own render quantum (128 frames from `frame`).
    return Math.max(0, Math.min(at.played - 128 + Math.round(audible - at.frame), this.samplesPushed));
  }

  /** No more audio for this utterance; `drained` follows when it has all played. */
  end() {
    this._post({ type: 'end' });
  }

  /** Barge-in: silence now and drop everything queued. */
  clear() {
    this._at = null;
    this._resampler = null;
    this.stats.state = 'idle';
    this.stats.buffered = 0;
    this._gen += 1; // late events of the cleared utterance are ignored
    this._post({ type: 'clear', gen: this._gen });
  }

  async close() {
    if (this.node) this.node.disconnect();
    if (this.context && this.context.state !== 'closed') await this.context.close();
  }
}
