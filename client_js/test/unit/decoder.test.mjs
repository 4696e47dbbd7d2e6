import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import {
  createDecoder,
  loadWasmOpusDecoder,
  webCodecsOpusSupported,
  PcmDecoder,
  DEFAULT_WASM_URL,
} from '../../src/decoder.js';

// The vendored UMD bundle subclasses the browser's Worker for its worker variant; node has
// none, so give it a stand-in (the synchronous OpusDecoder used here never touches it).
globalThis.Worker ??= class Worker {};

const fixture = JSON.parse(readFileSync(new URL('../fixtures/tone_opus.json', import.meta.url), 'utf8'));
const packets = (rate) => fixture.packets[String(rate)].map((b64) => new Uint8Array(Buffer.from(b64, 'base64')));

function concat(chunks) {
  const out = new Float32Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/** Dominant frequency by zero crossings over the steady part of the signal. */
function toneHz(x, rate) {
  const part = x.subarray(Math.floor(x.length / 4), Math.floor((3 * x.length) / 4));
  let crossings = 0;
  for (let i = 1; i < part.length; i++) if ((part[i - 1] < 0) !== (part[i] < 0)) crossings++;
  return (crossings / 2) * (rate / part.length);
}

const rms = (x) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);

afterEach(() => {
  delete globalThis.AudioDecoder;
  delete globalThis.EncodedAudioChunk;
});

test('the vendored opus-decoder bundle matches node_modules (npm run vendor)', () => {
  const script = fileURLToPath(new URL('../../scripts/vendor.mjs', import.meta.url));
  execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' });
});

test('the vendored bundle loads as a module and exposes OpusDecoder', async () => {
  const cls = await loadWasmOpusDecoder(DEFAULT_WASM_URL);
  assert.equal(typeof cls, 'function');
  assert.equal(cls.name, 'OpusDecoder');
});

for (const streamRate of [48000, 24000]) {
  test(`wasm fallback decodes real ${streamRate / 1000} kHz Opus packets at 48 kHz`, async () => {
    const chunks = [];
    const rates = new Set();
    const errors = [];
    const dec = await createDecoder({
      codec: 'opus',
      sampleRate: streamRate,
      outputRate: 48000,
      onSamples: (s, r) => {
        chunks.push(s);
        rates.add(r);
      },
      onError: (e) => errors.push(e),
    });
    assert.equal(dec.kind, 'wasm', 'no WebCodecs in node: the fallback is chosen');
    const pk = packets(streamRate);
    for (const p of pk) dec.decode(p);
    await dec.flush();
    const out = concat(chunks);
    assert.deepEqual(errors, []);
    assert.deepEqual([...rates], [48000]);
    assert.equal(chunks.length, pk.length, 'one output per packet');
    assert.equal(out.length, pk.length * 960, '20 ms at 48 kHz per packet');
    const hz = toneHz(out, 48000);
    assert.ok(Math.abs(hz - fixture.freq) < 10, `decoded tone at ${hz} Hz`);
    assert.ok(rms(out.subarray(4800)) > 0.2, 'not silence');
    // Output buffers are independent copies (the player transfers them).
    assert.notEqual(chunks[0].buffer, chunks[1].buffer);
    // reset(): a fresh decoder state; packets sent before its wasm is ready are kept.
    dec.reset();
    dec.decode(pk[0]);
    await dec.flush();
    assert.equal(chunks.length, pk.length + 1);
    dec.close();
    dec.decode(pk[1]);
    assert.equal(chunks.length, pk.length + 1, 'nothing after close');
  });
}

test('prefer: "wasm" skips WebCodecs even where it is supported', async () => {
  let probed = 0;
  globalThis.AudioDecoder = class {
    static async isConfigSupported() {
      probed++;
      return { supported: true };
    }
  };
  const dec = await createDecoder({ codec: 'opus', sampleRate: 48000, prefer: 'wasm', onSamples() {} });
  assert.equal(dec.kind, 'wasm');
  assert.equal(probed, 0);
  dec.close();
});

test('feature detection: missing, unsupported and throwing AudioDecoder', async () => {
  assert.equal(await webCodecsOpusSupported(), false);
  globalThis.AudioDecoder = class {
    static async isConfigSupported(cfg) {
      return { supported: cfg.sampleRate === 48000, config: cfg };
    }
  };
  assert.equal(await webCodecsOpusSupported(48000), true);
  assert.equal(await webCodecsOpusSupported(24000), false);
  globalThis.AudioDecoder = class {
    static async isConfigSupported() {
      throw new TypeError('bad config');
    }
  };
  assert.equal(await webCodecsOpusSupported(), false);
});

test('prefer: "webcodecs" fails loudly where WebCodecs cannot decode Opus', async () => {
  await assert.rejects(
    createDecoder({ codec: 'opus', sampleRate: 48000, prefer: 'webcodecs', onSamples() {} }),
    /WebCodecs/,
  );
});

test('WebCodecs path: raw packets, increasing timestamps, f32-planar copy, flush', async () => {
  const made = [];
  globalThis.EncodedAudioChunk = class {
    constructor(init) {
      Object.assign(this, init);
    }
  };
  globalThis.AudioDecoder = class {
    static async isConfigSupported(cfg) {
      return { supported: cfg.codec === 'opus' && cfg.numberOfChannels === 1 };
    }
    constructor({ output, error }) {
      this.output = output;
      this.error = error;
      this.state = 'unconfigured';
      this.chunks = [];
      this.pending = [];
      made.push(this);
    }
    configure(cfg) {
      this.config = cfg;
      this.state = 'configured';
    }
    decode(chunk) {
      this.chunks.push(chunk);
      const n = chunk.data.length;
      this.pending.push(() => this.output({
        numberOfFrames: n,
        sampleRate: this.config.sampleRate,
        copyTo(dst, opts) {
          assert.deepEqual(opts, { planeIndex: 0, format: 'f32-planar' });
          dst.fill(n);
        },
        close() {
          this.closed = true;
        },
      }));
    }
    async flush() {
      for (const f of this.pending.splice(0)) f();
    }
    close() {
      this.state = 'closed';
    }
  };
  const got = [];
  const dec = await createDecoder({ codec: 'opus', sampleRate: 24000, outputRate: 48000, onSamples: (s, r) => got.push([s.length, s[0], r]) });
  assert.equal(dec.kind, 'webcodecs');
  assert.deepEqual(made[0].config, { codec: 'opus', sampleRate: 48000, numberOfChannels: 1 });
  assert.equal(made[0].config.description, undefined, 'raw Opus: no description');
  dec.decode(new Uint8Array(3));
  dec.decode(new Uint8Array(5));
  assert.deepEqual(made[0].chunks.map((c) => [c.type, c.timestamp]), [['key', 0], ['key', 20000]]);
  await dec.flush();
  assert.deepEqual(got, [[3, 3, 48000], [5, 5, 48000]]);
  // reset(): pending output of the old decoder is dropped, a fresh one takes over.
  dec.decode(new Uint8Array(7));
  dec.reset();
  await made[0].flush();
  assert.equal(made[0].state, 'closed');
  assert.equal(got.length, 2);
  dec.decode(new Uint8Array(9));
  assert.equal(made[1].chunks[0].timestamp, 0);
  await dec.flush();
  assert.deepEqual(got.at(-1), [9, 9, 48000]);
  dec.close();
});

test('PCM s16le passthrough, with a split sample carried across frames', async () => {
  const got = [];
  const dec = await createDecoder({ codec: 'pcm_s16le', sampleRate: 24000, onSamples: (s, r) => got.push([Array.from(s), r]) });
  assert.ok(dec instanceof PcmDecoder);
  const bytes = new Uint8Array(new Int16Array([0, 16384, -32768, 32767]).buffer);
  dec.decode(bytes.subarray(0, 3)); // one and a half samples
  dec.decode(bytes.subarray(3));
  assert.deepEqual(got, [[[0], 24000], [[0.5, -1, 32767 / 32768], 24000]]);
});

test('unknown codecs are refused', async () => {
  await assert.rejects(createDecoder({ codec: 'mp3', sampleRate: 48000, onSamples() {} }), /unsupported codec/);
});
