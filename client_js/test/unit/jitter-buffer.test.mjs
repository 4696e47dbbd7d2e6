import { test } from 'node:test';
import assert from 'node:assert/strict';

import { JitterBuffer } from '../../src/jitter-buffer.js';

const Q = 128; // render quantum
const ramp = (n, from = 0) => Float32Array.from({ length: n }, (_, i) => from + i);

function renderAll(buf, quanta) {
  const out = [];
  const events = [];
  for (let i = 0; i < quanta; i++) {
    const q = new Float32Array(Q);
    events.push(...buf.render(q));
    out.push(...q);
  }
  return { out: Float32Array.from(out), events };
}

test('silent and idle until begin/push', () => {
  const b = new JitterBuffer();
  const { out, events } = renderAll(b, 3);
  assert.equal(b.state, 'idle');
  assert.deepEqual(events, []);
  assert.ok(out.every((x) => x === 0));
});

test('waits for the pre-buffer, then plays samples in order without gaps', () => {
  const b = new JitterBuffer({ sampleRate: 48000, prebufferMs: 40 }); // 1920 samples
  b.begin();
  b.push(ramp(1000, 1));
  let r = renderAll(b, 4);
  assert.ok(r.out.every((x) => x === 0), 'nothing before the pre-buffer fills');
  assert.equal(b.state, 'buffering');
  b.push(ramp(1000, 1001));
  r = renderAll(b, 15); // 1920 samples
  assert.deepEqual(r.events[0], { type: 'playing', samplesPlayed: 0, resumed: false });
  assert.deepEqual(Array.from(r.out), Array.from(ramp(1920, 1)));
  assert.equal(b.samplesPlayed, 1920);
  assert.equal(b.buffered, 80);
});

test('end() plays out a short utterance below the pre-buffer and reports drained', () => {
  const b = new JitterBuffer({ prebufferMs: 60 });
  b.begin();
  b.push(ramp(300, 1));
  b.end();
  const { out, events } = renderAll(b, 4);
  assert.deepEqual(events.map((e) => e.type), ['playing', 'drained']);
  assert.deepEqual(events[1], { type: 'drained', samplesPlayed: 300, underruns: 0 });
  assert.deepEqual(Array.from(out.subarray(0, 300)), Array.from(ramp(300, 1)));
  assert.ok(out.subarray(300).every((x) => x === 0));
  assert.equal(b.state, 'idle');
});

test('an empty utterance that ends drains without playing', () => {
  const b = new JitterBuffer();
  b.begin();
  b.end();
  const { events } = renderAll(b, 1);
  assert.deepEqual(events, [{ type: 'drained', samplesPlayed: 0, underruns: 0 }]);
});

test('running dry before end counts an underrun and grows the pre-buffer', () => {
  const b = new JitterBuffer({ prebufferMs: 20, growMs: 40, maxPrebufferMs: 100 }); // 960 samples
  b.begin();
  b.push(ramp(1000, 1));
  const r = renderAll(b, 8); // 1024 needed, 1000 there
  const under = r.events.filter((e) => e.type === 'underrun');
  assert.deepEqual(under, [{ type: 'underrun', underruns: 1, prebufferMs: 60 }]);
  assert.equal(b.state, 'buffering');
  assert.equal(b.samplesPlayed, 1000);
  // Re-buffers to the grown pre-buffer (2880 samples) before resuming.
  b.push(ramp(2000, 1001));
  let r2 = renderAll(b, 2);
  assert.ok(r2.out.every((x) => x === 0));
  b.push(ramp(1000, 3001));
  r2 = renderAll(b, 1);
  assert.deepEqual(r2.events, [{ type: 'playing', samplesPlayed: 1000, resumed: true }]);
  assert.equal(r2.out[0], 1001);
  // Growth is capped.
  for (let i = 0; i < 5; i++) {
    b.clear();
    b.begin();
    b.prebufferMs = 100;
    b.push(ramp(5000));
    renderAll(b, 60);
  }
  assert.equal(b.prebufferMs, 100);
});

test('draining after end is not an underrun', () => {
  const b = new JitterBuffer({ prebufferMs: 20 });
  b.begin();
  b.push(ramp(1500));
  b.end();
  const { events } = renderAll(b, 20);
  assert.deepEqual(events.map((e) => e.type), ['playing', 'drained']);
  assert.equal(b.underruns, 0);
});

test('clear() silences within the next quantum and drops what was queued', () => {
  const b = new JitterBuffer({ prebufferMs: 10 });
  b.begin();
  b.push(new Float32Array(48000).fill(0.5));
  renderAll(b, 2);
  b.clear();
  assert.equal(b.buffered, 0);
  assert.equal(b.state, 'idle');
  const { out, events } = renderAll(b, 2);
  assert.ok(out.every((x) => x === 0));
  assert.deepEqual(events, []);
});

test('the ring grows past its capacity and keeps order across the wrap', () => {
  const b = new JitterBuffer({ sampleRate: 1000, prebufferMs: 0, initialCapacitySeconds: 1 }); // capacity 1024
  b.begin();
  b.push(ramp(700, 0));
  renderAll(b, 4); // read 512: read index mid-ring
  b.push(ramp(900, 700)); // wraps, then exceeds capacity -> grows
  assert.equal(b.buffered, 188 + 900);
  const { out } = renderAll(b, 9);
  assert.deepEqual(Array.from(out.subarray(0, 1088)), Array.from(ramp(1088, 512)));
});

test('begin() resets the per-utterance counters', () => {
  const b = new JitterBuffer({ prebufferMs: 0 });
  b.begin();
  b.push(ramp(200));
  renderAll(b, 3);
  assert.equal(b.underruns, 1);
  b.begin();
  assert.equal(b.underruns, 0);
  assert.equal(b.samplesPlayed, 0);
  assert.equal(b.buffered, 0);
});
