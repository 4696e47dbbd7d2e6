// Rooms in the browser client: MouthTrack (mouth shapes on the playback clock), RoomListener
// (utterances back to back on one timeline, words and mouth released by the clock, superseded
// utterances cut, refusals), the jitter buffer's reopen, and the VTube Studio driver's messages.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { JitterBuffer } from '../../src/jitter-buffer.js';
import { MouthTrack, REST } from '../../src/mouth-track.js';
import { RoomListener, roomUrl } from '../../src/room-listener.js';
import { VTubeStudioDriver, mouthParameters, vtsRequest } from '../../src/vts.js';
import { FakePlayer, FakeWebSocket, fakeDecoderFactory, tick } from '../helpers/fakes.mjs';

const mouthEvent = (start, opens) => ({
  type: 'mouth', start_ms: start, frame_ms: 20, open: opens, form: opens.map(() => 0.1),
  viseme: opens.map((o) => (o > 0 ? 'aa' : 'sil')),
});

test('MouthTrack gives the frame heard now, once, skipping what a late clock passed', () => {
  const m = new MouthTrack();
  m.add(mouthEvent(0, [0, 0.5, 0.9]));
  m.add(mouthEvent(60, [0.2]));
  assert.equal(m.advance(-5), null);
  assert.equal(m.advance(0).open, 0);
  assert.equal(m.advance(10), null, 'still the same frame');
  const late = m.advance(45); // frame 20 ms passed unseen: the one at 40 ms is heard now
  assert.deepEqual([late.t, late.open], [40, 0.9]);
  assert.equal(m.advance(70).t, 60);
  assert.equal(m.advance(79), null);
  assert.equal(m.advance(80), REST, 'past the last frame the mouth rests');
  assert.equal(m.advance(500), null, 'rests once');
  assert.equal(m.end, 80);
});

test('JitterBuffer.reopen: more audio after end on the same timeline, no underrun', () => {
  const b = new JitterBuffer({ sampleRate: 48000, prebufferMs: 0 });
  b.begin();
  b.push(new Float32Array(256).fill(1));
  b.end();
  const out = new Float32Array(128);
  b.render(out);
  b.render(out);
  const drained = b.render(out);
  assert.deepEqual(drained.map((e) => e.type), ['drained']);
  b.reopen();
  assert.equal(b.state, 'buffering');
  b.push(new Float32Array(128).fill(2));
  const events = b.render(out);
  assert.equal(events[0].type, 'playing');
  assert.equal(out[0], 2);
  assert.equal(b.samplesPlayed, 384, 'the counters go on');
  assert.equal(b.underruns, 0);
});

class ClockPlayer extends FakePlayer {
  constructor() {
    super();
    this.heard = 0; // samples heard now (the test moves it)
    this.reopened = 0;
  }

  begin() {
    super.begin();
    this.heard = 0;
  }

  reopen() {
    this.calls.push('reopen');
    this.reopened += 1;
  }

  audibleSamples() {
    return Math.min(this.heard, this.samplesPushed);
  }
}

function listener(opts = {}) {
  FakeWebSocket.instances = [];
  const player = new ClockPlayer();
  const room = new RoomListener({
    url: 'ws://x/v1/rooms/main/listen?token=t', WebSocket: FakeWebSocket, player,
    createDecoder: fakeDecoderFactory(), reconnect: false, ...opts,
  });
  return { room, player };
}

const started = (n, extra = {}) => ({
  type: 'started', stream_id: `s-${n}`, sample_rate: 48000, codec: 'opus', frame_ms: 20, voice: 'joe',
  controls: {}, room: 'main', utterance: n, codec_delay_ms: 0, ...extra,
});
const done = (extra = {}) => ({ type: 'done', audio_ms: 40, first_audio_ms: 1, rtf: 0.1, cancelled: false, segments: 1, ...extra });

test('roomUrl: the listener socket of a room on the page server', () => {
  assert.equal(roomUrl('main', 'a b', 'https://tts.example/live?x=1'), 'wss://tts.example/v1/rooms/main/listen?token=a+b');
});

test('RoomListener plays utterances back to back and releases words and mouth by the clock', async () => {
  const { room, player } = listener();
  const opening = room.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  const words = [];
  const mouths = [];
  room.on('word', (w) => words.push(w.word));
  room.on('mouth', (f) => mouths.push([f.utterance, f.t, f.open]));
  ws.serverEvent({ type: 'room', room: 'main', listeners: 1, speaking: false });
  ws.serverEvent(started(1));
  ws.serverEvent({ type: 'words', index: 0, words: [{ word: 'Hi', start_ms: 5, end_ms: 20 }, { word: 'there', start_ms: 25, end_ms: 40 }] });
  ws.serverEvent(mouthEvent(0, [0.3, 0.8]));
  ws.serverAudio(new Uint8Array(96)); // 960 samples: 20 ms
  ws.serverAudio(new Uint8Array(96));
  ws.serverEvent(done());
  ws.serverEvent(started(2));
  ws.serverEvent(mouthEvent(0, [0.6]));
  ws.serverAudio(new Uint8Array(96));
  ws.serverEvent(done());
  await tick(20);
  assert.deepEqual(player.calls.filter((c) => !c.startsWith('push')), ['begin', 'end', 'reopen', 'end']);
  assert.equal(player.samplesPushed, 2880, 'both utterances on one timeline');
  assert.deepEqual(words, [], 'no word is heard yet');
  assert.deepEqual(mouths, [[1, 0, 0.3]], 'the first frame is heard from 0 ms');
  player.heard = 1440; // 30 ms
  await tick(30);
  assert.deepEqual(words, ['Hi', 'there']);
  assert.deepEqual(mouths.slice(1), [[1, 20, 0.8]]);
  player.heard = 1920; // utterance 2 starts where utterance 1 ended
  await tick(30);
  assert.deepEqual(mouths.slice(2), [[1, -1, 0], [2, 0, 0.6]]);
  player.heard = 2880;
  await tick(30);
  assert.deepEqual(mouths.at(-1), [2, -1, 0], 'at rest after the last frame');
  assert.equal(room.stats.utterances, 2);
});

test('RoomListener: the second utterance waits for the first to be decoded to its end', async () => {
  const { room, player } = listener({ createDecoder: fakeDecoderFactory({ delayMs: 15 }) });
  const opening = room.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  ws.serverEvent(started(1));
  await tick(5);
  ws.serverAudio(new Uint8Array(10));
  ws.serverEvent(done());
  ws.serverEvent(started(2));
  await tick(5);
  ws.serverAudio(new Uint8Array(20));
  ws.serverEvent(done());
  await tick(60);
  const pushes = player.calls.filter((c) => c.startsWith('push'));
  assert.deepEqual(pushes, ['push:100@48000', 'push:200@48000'], 'in order, whatever the decoders did');
});

test('RoomListener: a superseded utterance is silenced at once; refusals stop the reconnecting', async () => {
  const { room, player } = listener({ reconnect: true });
  const opening = room.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  ws.serverEvent(started(1));
  ws.serverAudio(new Uint8Array(96));
  await tick(5);
  ws.serverEvent(done({ cancelled: true, superseded: true }));
  ws.serverAudio(new Uint8Array(96)); // after done: not played
  ws.serverEvent(started(2));
  ws.serverAudio(new Uint8Array(48));
  await tick(5);
  assert.deepEqual(player.calls.filter((c) => !c.startsWith('push')), ['begin', 'clear', 'begin']);
  const errors = [];
  room.on('error', (e) => errors.push(e.code));
  ws.serverEvent({ type: 'error', code: 'room_refused', message: 'no' });
  ws.serverClose(1008);
  await tick(700);
  assert.deepEqual(errors, ['room_refused']);
  assert.equal(FakeWebSocket.instances.length, 1, 'a refused page does not knock again');
  assert.equal(room.refused.code, 'room_refused');
});

test('RoomListener reconnects after the connection drops', async () => {
  const { room } = listener({ reconnect: true });
  const opening = room.open();
  FakeWebSocket.last().serverOpen();
  await opening;
  FakeWebSocket.last().serverClose(1006);
  await tick(600);
  assert.equal(FakeWebSocket.instances.length, 2);
  room.close();
});

// ------------------------------------------------------------------ VTube Studio
test('VTS requests: the public API envelope and the mouth parameters', () => {
  assert.deepEqual(vtsRequest('APIStateRequest', undefined, 'a'), {
    apiName: 'VTubeStudioPublicAPI', apiVersion: '1.0', requestID: 'a', messageType: 'APIStateRequest',
  });
  assert.deepEqual(mouthParameters({ open: 1.4, form: -1 }), {
    faceFound: false, mode: 'set',
    parameterValues: [{ id: 'MouthOpen', value: 1 }, { id: 'MouthSmile', value: 0 }],
  });
  assert.equal(mouthParameters({ open: 0.2, form: 0 }).parameterValues[1].value, 0.5);
});

class FakeVts extends FakeWebSocket {
  constructor(url) {
    super(url);
    this.token = 'tok-1';
    queueMicrotask(() => this.serverOpen());
  }

  send(data) {
    super.send(data);
    const msg = JSON.parse(data);
    const reply = (messageType, body) => queueMicrotask(() => this.serverEvent({
      apiName: 'VTubeStudioPublicAPI', apiVersion: '1.0', requestID: msg.requestID, messageType, data: body,
    }));
    if (msg.messageType === 'AuthenticationTokenRequest') reply('AuthenticationTokenResponse', { authenticationToken: this.token });
    if (msg.messageType === 'AuthenticationRequest') {
      reply('AuthenticationResponse', { authenticated: msg.data.authenticationToken === this.token, reason: '' });
    }
  }
}

function memoryStorage(init = {}) {
  const m = new Map(Object.entries(init));
  return { getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, v), removeItem: (k) => m.delete(k), m };
}

test('VTubeStudioDriver: asks for a token once, keeps it, authenticates, injects the mouth', async () => {
  FakeWebSocket.instances = [];
  const storage = memoryStorage();
  const vts = new VTubeStudioDriver({ WebSocket: FakeVts, storage });
  assert.equal(vts.mouth({ open: 1, form: 0 }), false, 'nothing before authentication');
  assert.equal(await vts.connect(), true);
  const sock = FakeWebSocket.last();
  assert.deepEqual(sock.messages.map((m) => m.messageType), ['AuthenticationTokenRequest', 'AuthenticationRequest']);
  assert.deepEqual(sock.messages[0].data, { pluginName: 'EmoStream Live', pluginDeveloper: 'EmoStream' });
  assert.equal(storage.getItem('emostream.vts.token'), 'tok-1');
  assert.equal(vts.mouth({ open: 0.5, form: 0.2 }), true);
  const inject = sock.messages.at(-1);
  assert.equal(inject.messageType, 'InjectParameterDataRequest');
  assert.deepEqual(inject.data.parameterValues, [{ id: 'MouthOpen', value: 0.5 }, { id: 'MouthSmile', value: 0.6 }]);
  // Next session: the kept token, no new request; a revoked one is asked for again.
  const again = new VTubeStudioDriver({ WebSocket: FakeVts, storage: memoryStorage({ 'emostream.vts.token': 'old' }) });
  assert.equal(await again.connect(), true);
  assert.deepEqual(FakeWebSocket.last().messages.map((m) => m.messageType),
    ['AuthenticationRequest', 'AuthenticationTokenRequest', 'AuthenticationRequest']);
});
