import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';

import { EmoStreamContexts, decodeFrame, encodeFrame, FRAME_HEADER_BYTES } from '../../src/contexts.js';
import { FakeWebSocket, fakeDecoderFactory, tick } from '../helpers/fakes.mjs';

beforeEach(() => {
  FakeWebSocket.instances = [];
});

async function connected(extra = {}) {
  const factory = extra.factory || fakeDecoderFactory();
  const mux = new EmoStreamContexts({ url: 'ws://test/v1/stream', WebSocket: FakeWebSocket, createDecoder: factory, ...extra });
  const opening = mux.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  return { mux, ws, factory };
}

const started = (contextId, channel, over = {}) => ({
  type: 'started', context_id: contextId, channel, stream_id: `s-${contextId}`, sample_rate: 48000,
  codec: 'opus', frame_ms: 20, voice: 'joe', controls: { speed: true }, ...over,
});
const done = (contextId, over = {}) => ({ type: 'done', context_id: contextId, audio_ms: 40, cancelled: false, ...over });
const frame = (channel, seq, n) => encodeFrame(channel, seq, new Uint8Array(n));

test('frame header: version, flags, channel and sequence big-endian, then the payload', () => {
  const bytes = encodeFrame(513, 7, new Uint8Array([9, 8, 7]));
  assert.deepEqual([...bytes], [1, 0, 2, 1, 0, 0, 0, 7, 9, 8, 7]);
  const f = decodeFrame(bytes.buffer);
  assert.equal(FRAME_HEADER_BYTES, 8);
  assert.deepEqual([f.version, f.flags, f.channel, f.sequence, [...f.payload]], [1, 0, 513, 7, [9, 8, 7]]);
  assert.equal(decodeFrame(encodeFrame(65535, 2 ** 32 - 1, [])).sequence, 2 ** 32 - 1);
  assert.throws(() => decodeFrame(new Uint8Array(5)), /no header/);
  assert.throws(() => decodeFrame(new Uint8Array([2, 0, 0, 1, 0, 0, 0, 0])), /version 2/);
});

test('two contexts on one socket: every message carries its id, each gets its own audio', async () => {
  const { mux, ws, factory } = await connected({ defaults: { voice: 'joe' } });
  const a = mux.context({ contextId: 'turn-a', speed: 0.9, prompt: 'a bit sad', pitch_shift: null });
  const b = mux.context({ contextId: 'turn-b', format: { codec: 'pcm_s16le', sample_rate: 24000 } });
  a.text('Hello ');
  b.text('Other ');
  a.flush();
  const endA = a.end();
  const endB = b.end();
  assert.deepEqual(ws.messages, [
    { type: 'start', context_id: 'turn-a', voice: 'joe', speed: 0.9, prompt: 'a bit sad', format: { codec: 'opus', sample_rate: 48000 } },
    { type: 'start', context_id: 'turn-b', voice: 'joe', format: { codec: 'pcm_s16le', sample_rate: 24000 } },
    { type: 'text', context_id: 'turn-a', text: 'Hello ' },
    { type: 'text', context_id: 'turn-b', text: 'Other ' },
    { type: 'flush', context_id: 'turn-a' },
    { type: 'end', context_id: 'turn-a' },
    { type: 'end', context_id: 'turn-b' },
  ]);
  const heard = { a: [], b: [] };
  a.on('audio', (e) => heard.a.push(e.samples.length));
  b.on('audio', (e) => heard.b.push(e.samples.length));
  const words = [];
  a.on('words', (e) => words.push(e.words[0].word));
  await tick();
  ws.serverEvent(started('turn-a', 1));
  ws.serverEvent(started('turn-b', 2, { codec: 'pcm_s16le', sample_rate: 24000 }));
  ws.serverAudio(frame(1, 0, 3));
  ws.serverAudio(frame(2, 0, 5));
  ws.serverEvent({ type: 'words', context_id: 'turn-a', index: 0, words: [{ word: 'Hello' }] });
  ws.serverAudio(frame(1, 1, 4));
  ws.serverAudio(frame(2, 1, 6));
  ws.serverEvent(done('turn-a'));
  ws.serverAudio(frame(2, 2, 7));
  ws.serverEvent(done('turn-b'));
  const [sa, sb] = await Promise.all([endA, endB]);
  assert.deepEqual(heard, { a: [30, 40], b: [50, 60, 70] });
  assert.deepEqual(words, ['Hello']);
  assert.deepEqual([sa.packets, sa.samplesDecoded, sa.channel, sa.gaps, sa.cancelled], [2, 70, 1, 0, false]);
  assert.deepEqual([sb.packets, sb.samplesDecoded, sb.channel, sb.streamId], [3, 180, 2, 's-turn-b']);
  assert.deepEqual(factory.log.map((l) => `${l.codec}/${l.sampleRate}`), ['opus/48000', 'pcm_s16le/24000']);
  assert.equal(mux.contexts.size, 0);
});

test('cancel stops one context: its late frames are dropped, the other plays on', async () => {
  const { mux, ws } = await connected();
  const old = mux.context({ contextId: 'old' });
  old.text('A long answer.');
  ws.serverEvent(started('old', 1));
  await tick();
  ws.serverAudio(frame(1, 0, 2));
  const cancelling = old.cancel();
  const next = mux.context({ contextId: 'next' }); // the next turn starts at once
  next.text('Next.');
  const ending = next.end();
  assert.deepEqual(ws.messages.slice(-4).map((m) => `${m.type}:${m.context_id}`), [
    'cancel:old', 'start:next', 'text:next', 'end:next',
  ]);
  ws.serverEvent(started('next', 2));
  await tick();
  ws.serverAudio(frame(1, 1, 2)); // in flight before the server stopped
  ws.serverAudio(frame(2, 0, 9));
  ws.serverEvent(done('old', { cancelled: true }));
  ws.serverAudio(frame(2, 1, 9));
  ws.serverEvent(done('next'));
  const [so, sn] = await Promise.all([cancelling, ending]);
  assert.deepEqual([so.cancelled, so.packets, so.samplesDecoded], [true, 1, 20]);
  assert.deepEqual([sn.cancelled, sn.packets, sn.samplesDecoded, sn.gaps], [false, 2, 180, 0]);
  assert.throws(() => old.text('x'), /finished/);
});

test('a missing frame is counted and reported', async () => {
  const { mux, ws } = await connected();
  const ctx = mux.context({ contextId: 'c' });
  const errors = [];
  ctx.on('error', (e) => errors.push(e.code));
  ws.serverEvent(started('c', 4));
  await tick();
  ws.serverAudio(frame(4, 0, 1));
  ws.serverAudio(frame(4, 2, 1));
  ws.serverEvent(done('c'));
  const stats = await ctx.promise;
  assert.equal(stats.gaps, 1);
  assert.deepEqual(errors, ['sequence_gap']);
});

test('a refused start rejects that context only; connection errors go to the socket', async () => {
  const { mux, ws } = await connected();
  const good = mux.context({ contextId: 'good' });
  const bad = mux.context({ contextId: 'bad', voice: 'nobody' });
  const connErrors = [];
  mux.on('error', (e) => connErrors.push(e.code));
  ws.serverEvent(started('good', 1));
  ws.serverEvent({ type: 'error', context_id: 'bad', code: 'too_many_contexts', message: 'at most 8' });
  await assert.rejects(bad.promise, (err) => err.code === 'too_many_contexts');
  ws.serverEvent({ type: 'error', code: 'bad_json', message: 'x' });
  ws.serverAudio(frame(9, 0, 1));
  assert.deepEqual(connErrors, ['bad_json', 'unknown_channel']);
  assert.equal(mux.contexts.size, 1);
  good.end();
  ws.serverEvent(done('good'));
  assert.equal((await good.promise).cancelled, false);
});

test('context ids are checked and unique while live; losing the socket fails live contexts', async () => {
  const { mux, ws } = await connected();
  assert.throws(() => mux.context({ contextId: 'a b' }), /context id/);
  const ctx = mux.context({ contextId: 'x' });
  assert.throws(() => mux.context({ contextId: 'x' }), /still live/);
  const auto = mux.context();
  assert.match(auto.id, /^[A-Za-z0-9._:-]{1,64}$/);
  ws.serverClose(1011);
  await assert.rejects(ctx.promise, (err) => err.code === 'connection_closed');
  await assert.rejects(auto.promise, (err) => err.code === 'connection_closed');
});
