import { test } from 'node:test';
import assert from 'node:assert/strict';

import { LinearResampler } from '../../src/resampler.js';

const sine = (n, rate, f) => Float32Array.from({ length: n }, (_, i) => Math.sin((2 * Math.PI * f * i) / rate));

test('identity passes samples through', () => {
  const r = new LinearResampler(48000, 48000);
  const x = sine(100, 48000, 440);
  assert.equal(r.process(x), x);
});

test('24 kHz to 48 kHz doubles the length and interpolates', () => {
  const r = new LinearResampler(24000, 48000);
  const y = r.process(Float32Array.from([0, 1, 2, 3]));
  assert.deepEqual(Array.from(y), [0, 0.5, 1, 1.5, 2, 2.5, 3]);
});

test('chunked output equals one-shot output', () => {
  for (const [inRate, outRate] of [[16000, 48000], [24000, 48000], [48000, 16000], [22050, 48000]]) {
    const x = sine(4000, inRate, 300);
    const once = new LinearResampler(inRate, outRate).process(x);
    const r = new LinearResampler(inRate, outRate);
    const parts = [];
    for (let i = 0; i < x.length; i += 333) parts.push(...r.process(x.subarray(i, i + 333)));
    assert.equal(parts.length, once.length, `${inRate}->${outRate} length`);
    const maxErr = Math.max(...parts.map((v, i) => Math.abs(v - once[i])));
    assert.ok(maxErr < 1e-5, `${inRate}->${outRate} max error ${maxErr}`);
  }
});

test('a resampled tone keeps its frequency', () => {
  const r = new LinearResampler(16000, 48000);
  const y = r.process(sine(16000, 16000, 500));
  // Count zero crossings: 2 per period -> 1000 in one second.
  let crossings = 0;
  for (let i = 1; i < y.length; i++) if ((y[i - 1] < 0) !== (y[i] < 0)) crossings++;
  assert.ok(Math.abs(crossings - 1000) <= 2, `crossings ${crossings}`);
  assert.ok(Math.abs(y.length - 48000) <= 3);
});

test('rejects bad rates', () => {
  assert.throws(() => new LinearResampler(0, 48000), RangeError);
});
