import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';

import { EmoStreamClient, OPUS_LOOKAHEAD_MS } from '../../src/emostream-client.js';
import { WordTrack } from '../../src/word-track.js';
import { FakeWebSocket, FakePlayer, fakeDecoderFactory, tick } from '../helpers/fakes.mjs';

beforeEach(() => {
  FakeWebSocket.instances = [];
});

const W = (word, start, end, chars) => ({ word, char_start: chars[0], char_end: chars[1], start_ms: start, end_ms: end });
const HELLO = W('Hello', 100, 300, [0, 5]);
const THERE = W('there', 400, 700, [6, 11]);
const AGAIN = W('again', 900, 1200, [13, 18]);

test('WordTrack: words start once, in order, as the position passes them', () => {
  const track = new WordTrack();
  track.add([HELLO, THERE]);
  assert.deepEqual(track.advance(50), []);
  assert.equal(track.current, null);
  assert.deepEqual(track.advance(100).map((w) => [w.word, w.index]), [['Hello', 0]]);
  assert.deepEqual(track.advance(99), [], 'the clock never goes back');
  track.add([AGAIN]);
  assert.deepEqual(track.advance(950).map((w) => w.word), ['there', 'again']);
  assert.equal(track.current.word, 'again');
  assert.deepEqual(track.played().map((w) => w.word), ['Hello', 'there']);
  assert.deepEqual(track.advance(Infinity), []);
  assert.equal(track.played().length, 3);
});

async function connected(player) {
  const client = new EmoStreamClient({
    url: 'ws://test/v1/stream', WebSocket: FakeWebSocket, player, createDecoder: fakeDecoderFactory(),
  });
  const opening = client.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  return { client, ws };
}

const started = { type: 'started', stream_id: 's1', sample_rate: 48000, codec: 'opus', frame_ms: 20, voice: 'joe', controls: {}, word_timestamps: true };

test('word events follow the playback clock, not the arrival of the words', async () => {
  const player = new FakePlayer();
  const { client, ws } = await connected(player);
  const heard = [];
  client.on('word', (w) => heard.push(w.word));
  const finished = client.speak('Hello there again.', { word_timestamps: true });
  await tick();
  assert.equal(ws.messages[0].word_timestamps, true);
  ws.serverEvent(started);
  ws.serverEvent({ type: 'segment', index: 0, text: 'Hello there again.' });
  ws.serverEvent({ type: 'words', index: 0, words: [HELLO, THERE, AGAIN] });
  ws.serverAudio(new Uint8Array(100));
  await tick(45);
  assert.deepEqual(heard, [], 'nothing played yet');
  player.emitPlaying();
  player.stats.samplesPlayed = 48 * (420 + OPUS_LOOKAHEAD_MS); // 420 ms into the stream
  await tick(45);
  assert.deepEqual(heard, ['Hello', 'there']);
  ws.serverEvent({ type: 'done', audio_ms: 1250, first_audio_ms: 40, rtf: 0.1, cancelled: false,
    sent_samples: 60000, sent_ms: 1250, words_sent: [HELLO, THERE, AGAIN] }); // prettier-ignore
  await tick();
  player.drain(); // everything played
  const stats = await finished;
  assert.deepEqual(heard, ['Hello', 'there', 'again']);
  assert.deepEqual(stats.wordsPlayed.map((w) => w.word), ['Hello', 'there', 'again']);
  assert.equal(stats.wordsSent.length, 3);
});

/** A started utterance with its three words and some audio: the words heard so far. */
async function wordsPlaying(startedEvent) {
  const player = new FakePlayer();
  const { client, ws } = await connected(player);
  const heard = [];
  client.on('word', (w) => heard.push(w.word));
  client.start({ word_timestamps: true });
  client.text('Hello there again.');
  ws.serverEvent(startedEvent);
  ws.serverEvent({ type: 'words', index: 0, words: [HELLO, THERE, AGAIN] });
  ws.serverAudio(new Uint8Array(100));
  return { player, client, ws, heard };
}

test('cancel: the words heard are those played before the cut', async () => {
  const { player, client, ws, heard } = await wordsPlaying(started);
  player.emitPlaying();
  player.stats.samplesPlayed = 48 * (450 + OPUS_LOOKAHEAD_MS);
  const cancelled = client.cancel();
  player.stats.samplesPlayed = 48 * 2000; // late reports of the cleared player do not count
  ws.serverEvent({ type: 'done', audio_ms: 1250, first_audio_ms: 40, rtf: 0.1, cancelled: true,
    sent_samples: 60000, sent_ms: 1250, words_sent: [HELLO, THERE, AGAIN] }); // prettier-ignore
  const stats = await cancelled;
  await tick(45);
  assert.deepEqual(heard, ['Hello', 'there'], 'started before the cut');
  assert.deepEqual(stats.wordsPlayed.map((w) => w.word), ['Hello'], 'played to their end');
  assert.equal(stats.wordsSent.length, 3, 'the server sent more than was heard');
  assert.equal(stats.cancelled, true);
});

test('decode only (no player): decoded audio is the clock', async () => {
  const { client, ws } = await connected(null);
  const heard = [];
  client.on('word', (w) => heard.push(w.word));
  const finished = client.speak('Hello there.', { word_timestamps: true, format: { codec: 'pcm_s16le', sample_rate: 16000 } });
  await tick();
  ws.serverEvent({ ...started, codec: 'pcm_s16le', sample_rate: 16000 });
  await tick();
  ws.serverEvent({ type: 'words', index: 0, words: [HELLO, THERE] });
  ws.serverAudio(new Uint8Array(200)); // 2000 samples at 16 kHz: 125 ms
  await tick(45);
  assert.deepEqual(heard, ['Hello']);
  ws.serverEvent({ type: 'done', audio_ms: 750, first_audio_ms: 40, rtf: 0.1, cancelled: false });
  const stats = await finished;
  assert.deepEqual(heard, ['Hello', 'there']);
  assert.equal(stats.wordsPlayed.length, 2);
  assert.equal(stats.wordsSent, null);
});

test('without word timestamps nothing changes: no word events, empty wordsPlayed', async () => {
  const player = new FakePlayer();
  const { client, ws } = await connected(player);
  let words = 0;
  client.on('word', () => (words += 1));
  const finished = client.speak('Hi.');
  await tick();
  assert.equal('word_timestamps' in ws.messages[0], false);
  ws.serverEvent({ ...started, word_timestamps: undefined });
  ws.serverAudio(new Uint8Array(10));
  ws.serverEvent({ type: 'done', audio_ms: 20, first_audio_ms: 40, rtf: 0.1, cancelled: false });
  await tick();
  player.drain();
  const stats = await finished;
  assert.equal(words, 0);
  assert.deepEqual(stats.wordsPlayed, []);
  assert.equal(stats.wordsSent, null);
});

test("the server's codec_delay_ms replaces the default look-ahead", async () => {
  const { player, heard } = await wordsPlaying({ ...started, codec_delay_ms: 2.5 }); // CELT only
  player.emitPlaying();
  player.stats.samplesPlayed = 48 * (401 + 2.5); // 401 ms in: 'there' (400 ms) has begun
  await tick(45);
  assert.deepEqual(heard, ['Hello', 'there'], '6.5 ms would put it at 397 ms');
});

test('onMouth: asks for mouth shapes and gets each frame when the playback clock reaches it', async () => {
  const player = new FakePlayer();
  const frames = [];
  const client = new EmoStreamClient({
    url: 'ws://test/v1/stream', WebSocket: FakeWebSocket, player, createDecoder: fakeDecoderFactory(),
    onMouth: (f) => frames.push([f.t, f.open, f.viseme]),
  });
  const opening = client.open();
  const ws = FakeWebSocket.last();
  ws.serverOpen();
  await opening;
  const finished = client.speak('Hi.');
  await tick();
  assert.equal(ws.messages[0].mouth, true, 'the start asks for mouth events');
  ws.serverEvent({ ...started, word_timestamps: undefined });
  ws.serverEvent({ type: 'mouth', start_ms: 0, frame_ms: 20, open: [0, 0.7, 0.2], form: [0, 0.1, 0], viseme: ['sil', 'aa', 'E'] });
  ws.serverAudio(new Uint8Array(100));
  await tick(45);
  assert.deepEqual(frames, [], 'nothing played yet');
  player.emitPlaying();
  player.stats.samplesPlayed = 48 * (25 + OPUS_LOOKAHEAD_MS); // 25 ms heard: the second frame
  await tick(45);
  assert.deepEqual(frames, [[20, 0.7, 'aa']]);
  ws.serverEvent({ type: 'done', audio_ms: 60, first_audio_ms: 40, rtf: 0.1, cancelled: false });
  await tick();
  player.drain();
  await finished;
  assert.deepEqual(frames.slice(1), [[40, 0.2, 'E'], [-1, 0, 'sil']], 'played out, then at rest');
});
