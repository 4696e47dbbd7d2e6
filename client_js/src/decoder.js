// Audio decoders for the stream's binary frames, all with one shape:
//   decode(bytes: Uint8Array) -> void        (output goes to onSamples, in order)
//   flush() -> Promise<void>                 (resolves once every decoded sample was delivered)
//   reset() -> void                          (drop pending work; ready for a new stream)
//   close() -> void
//   kind: 'webcodecs' | 'wasm' | 'pcm'
// onSamples(samples: Float32Array, sampleRate: number) gets mono float32.
//
// Opus: WebCodecs AudioDecoder with raw packets (no `description`), feature-detected with
// AudioDecoder.isConfigSupported; otherwise the `opus-decoder` wasm package (vendored under
// client_js/vendor/ by `npm run vendor`). Opus is decoded straight at `outputRate` (any Opus
// packet decodes at any of 8/12/16/24/48 kHz), so playback at 48 kHz never resamples Opus.

const OPUS_RATES = new Set([8000, 12000, 16000, 24000, 48000]);

/** Default location of the vendored wasm fallback, next to this module's directory. */
export const DEFAULT_WASM_URL = new URL('../vendor/opus-decoder.min.js', import.meta.url).href;

/**
 * True when this browser's WebCodecs can decode raw mono Opus at `sampleRate`.
 * @param {number} [sampleRate=48000]
 */
export async function webCodecsOpusSupported(sampleRate = 48000) {
  const AD = globalThis.AudioDecoder;
  if (typeof AD !== 'function' || typeof AD.isConfigSupported !== 'function') return false;
  try {
    const res = await AD.isConfigSupported({ codec: 'opus', sampleRate, numberOfChannels: 1 });
    return Boolean(res && res.supported);
  } catch {
    return false;
  }
}

let wasmClassPromise = null;

/**
 * Load the OpusDecoder class of the `opus-decoder` package. The vendored file is a UMD
 * bundle; imported as a module it registers itself as globalThis['opus-decoder'].
 * @param {string} [url]
 */
export async function loadWasmOpusDecoder(url = DEFAULT_WASM_URL) {
  const existing = globalThis['opus-decoder'];
  if (existing && existing.OpusDecoder) return existing.OpusDecoder;
  if (!wasmClassPromise) {
    wasmClassPromise = import(/* @vite-ignore */ url).then((mod) => {
      const ns = globalThis['opus-decoder'] || mod;
      if (!ns || typeof ns.OpusDecoder !== 'function') {
        throw new Error(`no OpusDecoder in ${url}`);
      }
      return ns.OpusDecoder;
    });
    wasmClassPromise.catch(() => {
      wasmClassPromise = null;
    });
  }
  return wasmClassPromise;
}

/** s16le bytes → float32, carrying an odd trailing byte over to the next chunk. */
export class PcmDecoder {
  constructor({ sampleRate, onSamples }) {
    this.kind = 'pcm';
    this.sampleRate = sampleRate;
    this.onSamples = onSamples;
    this._carry = null;
  }

  decode(bytes) {
    let data = bytes;
    if (this._carry !== null) {
      data = new Uint8Array(bytes.length + 1);
      data[0] = this._carry;
      data.set(bytes, 1);
      this._carry = null;
    }
    const n = data.length >> 1;
    if (data.length & 1) this._carry = data[data.length - 1];
    if (n === 0) return;
    const view = new DataView(data.buffer, data.byteOffset, n * 2);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = view.getInt16(2 * i, true) / 32768;
    this.onSamples(out, this.sampleRate);
  }

  async flush() {}

  reset() {
    this._carry = null;
  }

  close() {}
}

/** Opus through the `opus-decoder` wasm package (synchronous decode once its wasm is ready). */
export class WasmOpusDecoder {
  constructor({ OpusDecoderClass, outputRate, onSamples, onError }) {
    this.kind = 'wasm';
    this.outputRate = outputRate;
    this.onSamples = onSamples;
    this.onError = onError || (() => {});
    this._cls = OpusDecoderClass;
    this._make();
  }

  _make() {
    const dec = new this._cls({
      channels: 1,
      streamCount: 1,
      coupledStreamCount: 0,
      channelMappingTable: [0],
      sampleRate: this.outputRate,
      preSkip: 0,
    });
    this._dec = dec;
    this._isReady = false;
    this._queue = []; // packets that came before the wasm instance was ready
    this._ready = Promise.resolve(dec.ready).then(() => {
      if (this._dec !== dec) return;
      this._isReady = true;
      const queued = this._queue;
      this._queue = [];
      for (const bytes of queued) this._decodeNow(bytes);
    });
  }

  /** Resolves when the wasm instance can decode. */
  get ready() {
    return this._ready;
  }

  decode(bytes) {
    if (!this._dec) return; // closed
    if (this._isReady) this._decodeNow(bytes);
    else this._queue.push(bytes);
  }

  _decodeNow(bytes) {
    const res = this._dec.decodeFrame(bytes);
    if (res.errors && res.errors.length) this.onError(new Error(res.errors[0].message));
    if (res.samplesDecoded > 0) {
      // channelData views wasm memory: copy before the next decode reuses it.
      this.onSamples(Float32Array.from(res.channelData[0].subarray(0, res.samplesDecoded)), res.sampleRate);
    }
  }

  async flush() {
    await this._ready;
  }

  reset() {
    this._free();
    this._make();
  }

  close() {
    this._free();
    this._queue = [];
  }

  _free() {
    const dec = this._dec;
    this._dec = null;
    if (!dec) return;
    // free() needs the instance built; an unready one is freed once it is.
    Promise.resolve(dec.ready).then(() => dec.free(), () => {});
  }
}

/** Opus through WebCodecs AudioDecoder (asynchronous decode, output in order). */
export class WebCodecsOpusDecoder {
  constructor({ outputRate, onSamples, onError, frameMs = 20 }) {
    this.kind = 'webcodecs';
    this.outputRate = outputRate;
    this.onSamples = onSamples;
    this.onError = onError || (() => {});
    this.frameUs = frameMs * 1000;
    this._make();
  }

  _make() {
    this._timestamp = 0;
    const dec = new globalThis.AudioDecoder({
      output: (data) => {
        try {
          if (dec !== this._dec) return; // output of a decoder that was reset
          const n = data.numberOfFrames;
          const out = new Float32Array(n);
          data.copyTo(out, { planeIndex: 0, format: 'f32-planar' });
          this.onSamples(out, data.sampleRate);
        } finally {
          data.close();
        }
      },
      error: (err) => this.onError(err),
    });
    dec.configure({ codec: 'opus', sampleRate: this.outputRate, numberOfChannels: 1 });
    this._dec = dec;
  }

  decode(bytes) {
    if (this._dec.state !== 'configured') this._make();
    const chunk = new globalThis.EncodedAudioChunk({ type: 'key', timestamp: this._timestamp, data: bytes });
    this._timestamp += this.frameUs;
    this._dec.decode(chunk);
  }

  async flush() {
    if (this._dec.state === 'configured') await this._dec.flush();
  }

  reset() {
    const old = this._dec;
    this._make();
    if (old.state !== 'closed') old.close();
  }

  close() {
    if (this._dec.state !== 'closed') this._dec.close();
  }
}

/**
 * Make the decoder for one stream.
 * @param {object} o
 * @param {'opus'|'pcm_s16le'} o.codec
 * @param {number} o.sampleRate stream rate from the `started` event
 * @param {number} [o.outputRate=48000] rate wanted out of Opus decoding (the AudioContext's)
 * @param {'auto'|'webcodecs'|'wasm'} [o.prefer='auto'] 'wasm' forces the fallback (tests, old browsers)
 * @param {(s: Float32Array, rate: number) => void} o.onSamples
 * @param {(e: Error) => void} [o.onError]
 * @param {string} [o.wasmUrl] where the vendored opus-decoder bundle lives
 * @param {Function} [o.OpusDecoderClass] inject the wasm class (node tests)
 * @param {number} [o.frameMs=20]
 */
export async function createDecoder({
  codec,
  sampleRate,
  outputRate = 48000,
  prefer = 'auto',
  onSamples,
  onError,
  wasmUrl = DEFAULT_WASM_URL,
  OpusDecoderClass,
  frameMs = 20,
}) {
  if (codec === 'pcm_s16le') return new PcmDecoder({ sampleRate, onSamples });
  if (codec !== 'opus') throw new Error(`unsupported codec ${codec}`);
  const rate = OPUS_RATES.has(outputRate) ? outputRate : 48000;
  if (prefer !== 'wasm' && (await webCodecsOpusSupported(rate))) {
    return new WebCodecsOpusDecoder({ outputRate: rate, onSamples, onError, frameMs });
  }
  if (prefer === 'webcodecs') throw new Error('WebCodecs Opus decoding is not supported here');
  const cls = OpusDecoderClass || (await loadWasmOpusDecoder(wasmUrl));
  const dec = new WasmOpusDecoder({ OpusDecoderClass: cls, outputRate: rate, onSamples, onError });
  await dec.ready;
  return dec;
}
