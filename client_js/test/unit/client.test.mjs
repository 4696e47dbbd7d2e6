import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';

import { EmoStreamClient, EmoStreamError } from '../../src/emostream-client.js';
import { FakeWebSocket, FakePlayer, fakeDecoderFactory, tick } from '../helpers/fakes.mjs';

let clock;
beforeEach(() => {
  FakeWebSocket.instances = [];
  clock = { t: 1000 };
});

function makeClient(extra = {}) {
  const player = extra.player === undefined ? new FakePlayer() : extra.player;
  const factory = extra.factory || fakeDecoderFactory();
  const client = new EmoStreamClient({
    url: 'ws://test/v1/stream',
    WebSocket: FakeWebSocket,
    player,
    createDecoder: factory,
    now: () => clock.t,
    ...extra.options,
  });
  return { client, player, factory };
}

async function connected(extra) {
  const made = makeClient(extra);
  const opening = made.client.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  return { ...made, ws };
}

const started = (over = {}) => ({
  type: 'started', stream_id: 's1', sample_rate: 48000, codec: 'opus', frame_ms: 20, voice: 'joe',
  controls: { speed: true, emotion: false }, ...over,
});
const done = (over = {}) => ({ type: 'done', audio_ms: 60, first_audio_ms: 42, rtf: 0.2, cancelled: false, ...over });

test('open connects to the url with arraybuffer binaries', async () => {
  const { client, ws } = await connected();
  assert.equal(ws.url, 'ws://test/v1/stream');
  assert.equal(ws.binaryType, 'arraybuffer');
  assert.equal(client.state, 'idle');
  assert.equal(client.connected, true);
});

test('open rejects when the socket closes before opening', async () => {
  const { client } = makeClient();
  const opening = client.open();
  FakeWebSocket.last().serverClose(1006);
  await assert.rejects(opening, /closed/);
  assert.equal(client.state, 'closed');
});

test('start sends only the given fields plus the default format', async () => {
  const { client, ws } = await connected();
  client.start({ voice: 'joe', emotion: 'happy', intensity: 0.5, speed: undefined, pitch_shift: null });
  assert.deepEqual(ws.messages, [
    { type: 'start', voice: 'joe', emotion: 'happy', intensity: 0.5, format: { codec: 'opus', sample_rate: 48000 } },
  ]);
  assert.equal(client.state, 'starting');
});

test('start merges constructor defaults and a per-call format', async () => {
  const { client, ws } = await connected({ options: { defaults: { voice: 'joe', speed: 1.2 }, format: { codec: 'opus', sample_rate: 24000 } } });
  client.start({ speed: 0.8, format: { codec: 'pcm_s16le' }, timestamps: true });
  assert.deepEqual(ws.messages[0], {
    type: 'start', voice: 'joe', speed: 0.8, timestamps: true, format: { codec: 'pcm_s16le', sample_rate: 24000 },
  });
});

test('speak: start, text, end in order; audio decoded and played; stats after drain', async () => {
  const { client, ws, player } = await connected();
  const seen = [];
  for (const type of ['started', 'segment', 'done', 'playing', 'audio']) client.on(type, (e) => seen.push(type));
  const speaking = client.speak('Hello world.', { voice: 'joe' });
  await tick();
  assert.deepEqual(ws.messages.map((m) => m.type), ['start', 'text', 'end']);
  assert.equal(ws.messages[1].text, 'Hello world.');
  assert.deepEqual(player.calls, ['begin']);

  ws.serverEvent(started());
  ws.serverEvent({ type: 'segment', index: 0, text: 'Hello world.' });
  clock.t = 1050;
  ws.serverAudio(new Uint8Array(80));
  ws.serverAudio(new Uint8Array(70));
  clock.t = 1090;
  player.emitPlaying();
  ws.serverAudio(new Uint8Array(75));
  ws.serverEvent(done({ audio_ms: 60 }));
  await tick();
  assert.deepEqual(player.calls, ['begin', 'push:800@48000', 'push:700@48000', 'push:750@48000', 'end']);
  let resolved = false;
  speaking.then(() => (resolved = true));
  await tick();
  assert.equal(resolved, false, 'speak waits for playback to drain');
  assert.equal(client.busy, true);
  assert.equal(client.state, 'idle', 'a new start is allowed once done arrived');
  player.drain();
  const stats = await speaking;
  assert.equal(stats.firstPacketMs, 50);
  assert.equal(stats.firstAudioMs, 90);
  assert.equal(stats.samplesPlayed, 2250);
  assert.equal(stats.samplesDecoded, 2250);
  assert.equal(stats.packets, 3);
  assert.equal(stats.bytes, 225);
  assert.equal(stats.audioMs, 60);
  assert.equal(stats.serverFirstAudioMs, 42);
  assert.equal(stats.underruns, 0);
  assert.equal(stats.segments, 1);
  assert.equal(stats.cancelled, false);
  assert.equal(stats.decoder, 'fake');
  assert.equal(stats.streamId, 's1');
  assert.deepEqual(client.lastStats, stats);
  assert.equal(client.busy, false);
  assert.deepEqual(seen, ['started', 'segment', 'audio', 'audio', 'playing', 'audio', 'done']);
});

test('write feeds tokens incrementally and starts an utterance when none is open', async () => {
  const { client, ws, player } = await connected();
  client.write('Hel', { voice: 'joe' });
  client.write(['lo ', '', 'there']);
  client.flush();
  const finished = client.end();
  assert.deepEqual(ws.messages, [
    { type: 'start', voice: 'joe', format: { codec: 'opus', sample_rate: 48000 } },
    { type: 'text', text: 'Hel' },
    { type: 'text', text: 'lo ' },
    { type: 'text', text: 'there' },
    { type: 'flush' },
    { type: 'end' },
  ]);
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(10));
  ws.serverEvent(done());
  await tick();
  player.drain();
  const stats = await finished;
  assert.equal(stats.samplesPlayed, 100);
});

test('text, flush and end need an open utterance', async () => {
  const { client } = await connected();
  assert.throws(() => client.text('x'), /start\(\) first/);
  assert.throws(() => client.flush(), /start\(\) first/);
  client.start();
  client.end();
  assert.throws(() => client.text('x'), /after end/);
  assert.throws(() => client.start(), /in progress/);
});

test('sending before open throws', () => {
  const { client } = makeClient();
  assert.throws(() => client.start(), /not connected/);
});

test('frames that arrive while the decoder is being built are decoded in order', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const inner = fakeDecoderFactory();
  const factory = async (opts) => {
    await gate;
    return inner(opts);
  };
  const { client, ws, player } = await connected({ factory });
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(1));
  ws.serverAudio(new Uint8Array(2));
  assert.deepEqual(player.calls, ['begin']);
  release();
  await tick();
  ws.serverAudio(new Uint8Array(3));
  assert.deepEqual(player.calls, ['begin', 'push:10@48000', 'push:20@48000', 'push:30@48000']);
  ws.serverEvent(done());
  await tick();
  player.drain();
  assert.equal((await p).packets, 3);
});

test('a started event with another format rebuilds the decoder for it', async () => {
  const factory = fakeDecoderFactory();
  const { client, ws } = await connected({ factory, player: null });
  client.start({ format: { codec: 'opus', sample_rate: 48000 } });
  ws.serverEvent(started({ codec: 'pcm_s16le', sample_rate: 24000 }));
  await tick();
  assert.deepEqual(factory.log.map((l) => `${l.codec}/${l.sampleRate}`), ['opus/48000', 'pcm_s16le/24000']);
  assert.equal(factory.log[1].outputRate, 24000, 'PCM is not resampled by the decoder');
});

test('opus is decoded at the player rate and the preference is passed on', async () => {
  const factory = fakeDecoderFactory();
  const { client } = await connected({ factory, options: { decoder: 'wasm' } });
  client.start({ format: { codec: 'opus', sample_rate: 16000 } });
  await tick();
  assert.equal(factory.log[0].outputRate, 48000);
  assert.equal(factory.log[0].prefer, 'wasm');
});

test('async decoder output is flushed into the player before end()', async () => {
  const { client, ws, player } = await connected({ factory: fakeDecoderFactory({ delayMs: 15 }) });
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(5));
  ws.serverAudio(new Uint8Array(6));
  ws.serverEvent(done());
  assert.deepEqual(player.calls, ['begin']);
  await tick(40);
  assert.deepEqual(player.calls, ['begin', 'push:50@48000', 'push:60@48000', 'end']);
  player.drain();
  assert.equal((await p).samplesPlayed, 110);
});

test('cancel silences at once, drops late audio and resolves on done', async () => {
  const { client, ws, player } = await connected();
  const p = client.speak('A long sentence.');
  await tick();
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(10));
  const c = client.cancel();
  assert.equal(player.calls.at(-1), 'clear');
  assert.equal(ws.messages.at(-1).type, 'cancel');
  assert.equal(client.state, 'cancelling');
  ws.serverAudio(new Uint8Array(10)); // in flight before the server stopped
  assert.equal(player.calls.filter((c2) => c2.startsWith('push')).length, 1);
  ws.serverEvent(done({ cancelled: true, audio_ms: 20 }));
  const stats = await p;
  assert.equal(await c, stats);
  assert.equal(stats.cancelled, true);
  assert.equal(stats.packets, 1);
  assert.equal(client.state, 'idle');
  // The connection takes a new utterance.
  client.start();
  assert.equal(ws.messages.at(-1).type, 'start');
});

test('cancel after done cuts the tail that is still playing', async () => {
  const { client, ws, player } = await connected();
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(10));
  ws.serverEvent(done());
  await tick();
  assert.equal(client.busy, true);
  const sentBefore = ws.sent.length;
  client.cancel();
  assert.equal(ws.sent.length, sentBefore, 'nothing to cancel on the server');
  assert.equal(player.calls.at(-1), 'clear');
  const stats = await p;
  assert.equal(stats.cancelled, true);
  assert.equal(client.busy, false);
});

test('a refused start rejects speak and swallows the not_started echoes', async () => {
  const { client, ws } = await connected();
  const errors = [];
  client.on('error', (e) => errors.push(e.code));
  const p = client.speak('x', { voice: 'nobody' });
  await tick();
  ws.serverEvent({ type: 'error', code: 'unknown_voice', message: "unknown voice 'nobody'" });
  await assert.rejects(p, (err) => err instanceof EmoStreamError && err.code === 'unknown_voice');
  ws.serverEvent({ type: 'error', code: 'not_started', message: "'text' before 'start'" });
  ws.serverEvent({ type: 'error', code: 'not_started', message: "'end' before 'start'" });
  assert.deepEqual(errors, ['unknown_voice']);
  assert.equal(client.state, 'idle');
  assert.equal(client.busy, false);
  ws.serverEvent({ type: 'error', code: 'bad_json', message: 'x' });
  assert.deepEqual(errors, ['unknown_voice', 'bad_json']);
});

test('an error after started is reported and the utterance goes on', async () => {
  const { client, ws, player } = await connected();
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  ws.serverEvent({ type: 'error', code: 'text_too_long', message: 'too long' });
  ws.serverAudio(new Uint8Array(4));
  ws.serverEvent(done());
  await tick();
  player.drain();
  const stats = await p;
  assert.deepEqual(stats.errors.map((e) => e.code), ['text_too_long']);
  assert.equal(stats.packets, 1);
});

test('audio before started is dropped and reported', async () => {
  const { client, ws, player } = await connected();
  const errors = [];
  client.on('error', (e) => errors.push(e));
  client.start();
  ws.serverAudio(new Uint8Array(4));
  await tick();
  assert.equal(player.calls.filter((c) => c.startsWith('push')).length, 0);
  assert.equal(errors[0].code, 'protocol');
  assert.equal(errors[0].local, true);
});

test('losing the connection rejects the utterance in progress', async () => {
  const { client, ws, player } = await connected();
  const closes = [];
  client.on('close', (e) => closes.push(e.code));
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  ws.serverClose(1011);
  await assert.rejects(p, (err) => err.code === 'connection_closed');
  assert.equal(player.calls.at(-1), 'clear');
  assert.equal(client.state, 'closed');
  assert.deepEqual(closes, [1011]);
});

test('without a player: audio events carry samples and done resolves at once', async () => {
  const { client, ws } = await connected({ player: null });
  const got = [];
  client.on('audio', (e) => got.push(e.samples.length));
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  clock.t = 1033;
  ws.serverAudio(new Uint8Array(3));
  ws.serverEvent(done());
  const stats = await p;
  assert.deepEqual(got, [30]);
  assert.equal(stats.firstAudioMs, 33);
  assert.equal(stats.samplesPlayed, 0);
  assert.equal(stats.samplesDecoded, 30);
});

test('underruns from the player are forwarded and counted', async () => {
  const { client, ws, player } = await connected();
  const under = [];
  client.on('underrun', (e) => under.push(e.underruns));
  const p = client.speak('x');
  await tick();
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(4));
  player.emitPlaying();
  player.emitUnderrun();
  ws.serverEvent(done());
  await tick();
  player.drain();
  const stats = await p;
  assert.deepEqual(under, [1]);
  assert.equal(stats.underruns, 1);
});

test('segment, timestamps and raw messages pass through; unknown types are ignored', async () => {
  const { client, ws } = await connected();
  const seen = [];
  for (const t of ['segment', 'timestamps', 'message', 'error']) client.on(t, (e) => seen.push(`${t}:${e.type || e.code}`));
  client.start();
  ws.serverEvent(started());
  ws.serverEvent({ type: 'timestamps', words: [{ word: 'hi', start_ms: 0, end_ms: 120 }] });
  ws.serverEvent({ type: 'segment', index: 0, text: 'hi' });
  ws.serverEvent({ type: 'future_event' });
  ws.serverRaw('{not json');
  assert.deepEqual(seen, [
    'message:started', 'message:timestamps', 'timestamps:timestamps', 'message:segment',
    'segment:segment', 'message:future_event', 'error:bad_server_json',
  ]);
});

test('two utterances in turn on one connection', async () => {
  const { client, ws, player } = await connected();
  for (const n of [1, 2]) {
    const p = client.speak(`utterance ${n}`);
    await tick();
    ws.serverEvent(started({ stream_id: `s${n}` }));
    ws.serverAudio(new Uint8Array(n));
    ws.serverEvent(done());
    await tick();
    player.drain();
    const stats = await p;
    assert.equal(stats.streamId, `s${n}`);
    assert.equal(stats.samplesPlayed, 10 * n);
  }
  assert.deepEqual(ws.messages.filter((m) => m.type === 'start').length, 2);
});

test('a new start while the previous tail plays resolves the previous utterance', async () => {
  const { client, ws, player } = await connected();
  const p1 = client.speak('one');
  await tick();
  ws.serverEvent(started());
  ws.serverAudio(new Uint8Array(4));
  ws.serverEvent(done());
  await tick();
  const p2 = client.speak('two');
  const s1 = await p1;
  assert.equal(s1.streamId, 's1');
  assert.equal(player.calls.filter((c) => c === 'begin').length, 2);
  ws.serverEvent(started({ stream_id: 's2' }));
  ws.serverEvent(done());
  const s2 = await p2;
  assert.equal(s2.streamId, 's2');
});

test('a decoder that cannot be built fails the utterance', async () => {
  const factory = async () => {
    throw new Error('no opus here');
  };
  const { client, ws } = await connected({ factory });
  const p = client.speak('x');
  await assert.rejects(p, (err) => err.code === 'decoder_unavailable' && /no opus/.test(err.message));
  assert.equal(client.busy, false);
  assert.ok(ws.sent.length >= 1);
});
