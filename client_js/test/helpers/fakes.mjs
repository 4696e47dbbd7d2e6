// Test doubles: a WebSocket driven by the test, a player that records calls, a decoder
// factory that turns each binary frame into a known number of samples.

import { Emitter } from '../../src/emitter.js';

export class FakeWebSocket {
  static instances = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.binaryType = 'blob';
    this.onopen = null;
    this.onclose = null;
    this.onerror = null;
    this.onmessage = null;
    FakeWebSocket.instances.push(this);
  }

  static last() {
    return FakeWebSocket.instances[FakeWebSocket.instances.length - 1];
  }

  send(data) {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    this.sent.push(data);
  }

  /** JSON messages the client sent, parsed. */
  get messages() {
    return this.sent.map((s) => JSON.parse(s));
  }

  close(code = 1000) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason: '' });
  }

  // ---- driven by the test, as the server
  serverOpen() {
    this.readyState = 1;
    this.onopen?.({});
  }

  serverEvent(obj) {
    this.onmessage?.({ data: JSON.stringify(obj) });
  }

  serverRaw(text) {
    this.onmessage?.({ data: text });
  }

  serverAudio(bytes) {
    const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    // Browsers deliver ArrayBuffer with binaryType 'arraybuffer'.
    this.onmessage?.({ data: u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength) });
  }

  serverClose(code = 1006) {
    this.readyState = 3;
    this.onclose?.({ code, reason: '' });
  }
}

export class FakePlayer extends Emitter {
  constructor({ sampleRate = 48000 } = {}) {
    super();
    this.sampleRate = sampleRate;
    this.node = {};
    this.calls = [];
    this.queued = 0;
    this.samplesPushed = 0;
    this.stats = { samplesPlayed: 0, buffered: 0, underruns: 0, prebufferMs: 40, state: 'idle' };
  }

  async init() {}
  async resume() {}

  begin() {
    this.calls.push('begin');
    this.queued = 0;
    this.samplesPushed = 0;
    this.stats = { ...this.stats, samplesPlayed: 0, underruns: 0 };
  }

  push(samples, rate) {
    this.calls.push(`push:${samples.length}@${rate}`);
    this.queued += samples.length;
    this.samplesPushed += samples.length;
  }

  end() {
    this.calls.push('end');
  }

  clear() {
    this.calls.push('clear');
    this.queued = 0;
  }

  /** Simulate the worklet: start playing. */
  emitPlaying() {
    this.stats.state = 'playing';
    this.emit('playing', { type: 'playing', samplesPlayed: 0, resumed: false });
  }

  /** Simulate the worklet: an underrun. */
  emitUnderrun() {
    this.stats.underruns += 1;
    this.emit('underrun', { type: 'underrun', underruns: this.stats.underruns, prebufferMs: 80 });
  }

  /** Simulate the worklet: everything queued has played. */
  drain() {
    this.stats.samplesPlayed = this.queued;
    this.stats.state = 'idle';
    this.emit('drained', { type: 'drained', samplesPlayed: this.queued, underruns: this.stats.underruns });
  }
}

/**
 * A decoder factory: every frame of N bytes becomes N*10 samples of value N/1000, output
 * synchronously (or after `delayMs` to model WebCodecs' asynchrony).
 */
export function fakeDecoderFactory({ delayMs = 0, log = [] } = {}) {
  const factory = async (opts) => {
    log.push({ codec: opts.codec, sampleRate: opts.sampleRate, outputRate: opts.outputRate, prefer: opts.prefer });
    const pending = new Set();
    let gen = 0;
    return {
      kind: 'fake',
      decode(bytes) {
        const myGen = gen;
        const out = () => {
          if (myGen === gen) opts.onSamples(new Float32Array(bytes.length * 10).fill(bytes.length / 1000), opts.outputRate);
        };
        if (delayMs === 0) out();
        else {
          const p = new Promise((r) => setTimeout(r, delayMs)).then(() => {
            out();
            pending.delete(p);
          });
          pending.add(p);
        }
      },
      async flush() {
        await Promise.all([...pending]);
      },
      reset() {
        gen += 1;
      },
      close() {},
    };
  };
  factory.log = log;
  return factory;
}

export const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
