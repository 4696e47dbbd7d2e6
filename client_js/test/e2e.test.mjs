// End to end: the EmoStream server (real when importable, else the fake fixture), the demo
// page in headless Debian Chromium, real decoding and AudioWorklet playback.
//
//   node --test test/e2e.test.mjs
//   EMOSTREAM_E2E_SERVER=real|fake  EMOSTREAM_PYTHON=/path/to/python  CHROMIUM_PATH=...
//
// Figures (first audio in the browser, ...) are printed as JSON lines starting with
// "E2E_FIGURES" and written to artifacts/client_js/e2e-figures.json with the screenshots.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { launchBrowser } from './helpers/browser.mjs';
import { startServer, REPO_ROOT } from './helpers/server.mjs';
import { encodeWav } from '../src/wav.js';

const ARTIFACTS = process.env.EMOSTREAM_ARTIFACTS || join(REPO_ROOT, 'artifacts', 'client_js');
const SENTENCE = 'Hello! This is a streaming test of the browser client, and it should play without a single gap.';
const LONG_TEXT = 'This sentence is long on purpose, so that there is plenty of audio still to come. '
  + 'We will interrupt it as soon as the first sound plays, the way a user barges in on a voice bot. '
  + 'If you can hear this part, the cancel did not work.';

// Poll page state every 50 ms, not every animation frame: the test shares 2 cores with the
// server and Chromium, and CPU it takes shows up as server latency.
const POLL_MS = 50;

let server;
let browser;
let page;
let pageLog = [];
const pageErrors = [];
const figures = { date: new Date().toISOString(), runs: {} };

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startServer();
  browser = await launchBrowser();
  page = browser.page;
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error') pageErrors.push(`console: ${msg.text()}`);
  });
  figures.server = server.kind;
  figures.browser = browser.context.browser()?.version() ?? 'chromium';
});

after(async () => {
  writeFileSync(join(ARTIFACTS, 'e2e-figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
  if (browser) await browser.close();
  if (server) await server.stop();
});

async function openDemo(query = '') {
  pageErrors.length = 0;
  await page.goto(new URL(`/${query}`, server.base).href);
  await page.evaluate(() => window.emostreamDemo.ready);
  await page.waitForFunction(() => window.emostreamDemo.client.connected, null, { timeout: 10000, polling: POLL_MS });
  const info = await page.evaluate(() => ({
    state: document.body.dataset.state,
    voices: window.emostreamDemo.voices.map((v) => v.id),
    ctx: window.emostreamDemo.client.player.context.state,
    rate: window.emostreamDemo.client.player.context.sampleRate,
  }));
  assert.equal(info.state, 'idle');
  assert.ok(info.voices.length >= 1, 'voice list filled from GET /v1/voices');
  assert.equal(info.rate, 48000);
  return info;
}

/** Type text, press Speak, wait until the page leaves `speaking`; returns lastStats. */
async function speakViaUi(text, { button = '#speak', format } = {}) {
  await page.fill('#text', text);
  if (format) await page.selectOption('#format', format);
  await page.click(button);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'speaking');
  await page.waitForFunction(() => document.body.dataset.state !== 'speaking', null, { timeout: 60000, polling: POLL_MS });
  const state = await page.evaluate(() => document.body.dataset.state);
  const stats = await page.evaluate(() => window.emostreamDemo.lastStats);
  pageLog = await page.evaluate(() => [...document.querySelectorAll('#log li')].map((li) => li.textContent));
  assert.equal(state, 'idle', `page state after speaking (errors: ${JSON.stringify(stats && stats.errors)})`);
  return stats;
}

// Timing on a shared 2-core machine is noisy (the server, Chromium and the test share the
// cores), so the zero-underrun check gets up to ATTEMPTS fresh page loads; every attempt must
// pass the exact checks (every decoded sample played, played == sent), and all attempts'
// figures are kept in e2e-figures.json. A client that drops or delays audio fails every attempt.
const ATTEMPTS = Number(process.env.EMOSTREAM_E2E_ATTEMPTS || 3);

function checkExact(stats, { decoder }) {
  const playedMs = (stats.samplesPlayed / 48000) * 1000;
  assert.equal(stats.decoder, decoder);
  assert.equal(stats.cancelled, false);
  assert.deepEqual(stats.errors, []);
  assert.ok(stats.audioMs > 1000, `server sent ${stats.audioMs} ms of audio for a sentence`);
  // Everything decoded was played, and it matches what the server says it sent.
  assert.equal(stats.samplesPlayed, stats.samplesDecoded, 'every decoded sample reached the speaker');
  const tolerance = 25 + 0.005 * stats.audioMs;
  assert.ok(Math.abs(playedMs - stats.audioMs) <= tolerance, `played ${playedMs.toFixed(1)} ms vs sent ${stats.audioMs} ms`);
  assert.ok(stats.firstAudioMs > 0 && stats.firstAudioMs < 5000, `first audio ${stats.firstAudioMs} ms`);
  assert.ok(stats.firstPacketMs <= stats.firstAudioMs, 'playback starts after the first packet');
  assert.deepEqual(pageErrors, []);
  return playedMs;
}

/** Open the demo, warm up, speak SENTENCE; repeat until an attempt has no underrun. */
async function speakGapless(name, { query = '', decoder }) {
  const attempts = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    await openDemo(query);
    // Headless Chromium has no sound card; the AudioContext must still run (fake output).
    assert.equal(await page.evaluate(() => window.emostreamDemo.client.player.context.state), 'running');
    // The first requests after start-up are slow (allocations, new tensor shapes): warm up
    // with the same text, so the measured run is the server's steady state.
    const warm = await speakViaUi(SENTENCE);
    // The pre-buffer the measured run starts with (60 ms, or more if the warm-up underran).
    const prebufferMs = await page.evaluate(() => window.emostreamDemo.client.player.stats.prebufferMs);
    const stats = await speakViaUi(SENTENCE);
    const playedMs = checkExact(stats, { decoder });
    const record = { ...stats, playedMs, warmupUnderruns: warm.underruns, prebufferMs };
    if (stats.underruns) record.log = pageLog;
    attempts.push(record);
    console.log(`E2E_FIGURES ${name} ${JSON.stringify({ attempt: i + 1, server: server.kind, prebufferMs, warmupUnderruns: warm.underruns, firstAudioMs: stats.firstAudioMs, firstPacketMs: stats.firstPacketMs, serverFirstAudioMs: stats.serverFirstAudioMs, underruns: stats.underruns, playedMs, audioMs: stats.audioMs, decoder: stats.decoder })}`);
    if (stats.underruns === 0) break;
  }
  figures.runs[name] = attempts;
  const clean = attempts.find((a) => a.underruns === 0);
  assert.ok(clean, `no underruns in one of ${attempts.length} attempts (underruns: ${attempts.map((a) => a.underruns)})`);
  return clean;
}

test('WebCodecs Opus: speaks a sentence gaplessly, first audio measured in the browser', async () => {
  await speakGapless('webcodecs', { decoder: 'webcodecs' });
  const readout = await page.textContent('#m-first');
  assert.match(readout, /^\d+ ms$/);
  assert.equal(await page.textContent('#m-underruns'), '0');
  await page.screenshot({ path: join(ARTIFACTS, 'e2e-webcodecs.png'), fullPage: true });
});

test('wasm fallback (opus-decoder) when forced: same playback guarantees', async () => {
  await speakGapless('wasm', { query: '?decoder=wasm', decoder: 'wasm' });
  await page.screenshot({ path: join(ARTIFACTS, 'e2e-wasm.png'), fullPage: true });
});

test('PCM s16le at 24 kHz passes through and is resampled to 48 kHz (underruns reported)', async () => {
  await openDemo();
  const stats = await speakViaUi(SENTENCE, { format: 'pcm_s16le/24000' });
  figures.runs.pcm24 = stats;
  checkExact(stats, { decoder: 'pcm' });
  console.log(`E2E_FIGURES pcm24 ${JSON.stringify({ firstAudioMs: stats.firstAudioMs, underruns: stats.underruns })}`);
});

test('Opus encoded at 16 kHz decodes straight to 48 kHz (WebCodecs)', async () => {
  await openDemo();
  const stats = await speakViaUi(SENTENCE, { format: 'opus/16000' });
  figures.runs.opus16 = stats;
  checkExact(stats, { decoder: 'webcodecs' });
  assert.equal(stats.samplesPlayed % 960, 0, 'whole 20 ms packets at 48 kHz');
});

test('tokens streamed word by word: everything sent is played, without an underrun', async () => {
  // Words 25 ms apart, as an LLM writes them: the server speaks "Hello!" and then the next
  // words as soon as there are enough of them (a segment may end between words, and grows
  // while the last one plays), so the listener never waits for the sentence's full stop
  // (before 2026-12-07 it did, and this test reported an underrun and passed). Strict: one
  // measured run, no retry, on a fresh page (the player's default 60 ms pre-buffer, not one an
  // earlier underrun grew), after a warm-up run that warms the server (not asserted).
  await openDemo();
  const warm = await speakViaUi(SENTENCE, { button: '#stream' });
  await openDemo();
  const prebufferMs = await page.evaluate(() => window.emostreamDemo.client.player.stats.prebufferMs);
  const stats = await speakViaUi(SENTENCE, { button: '#stream' });
  figures.runs.tokens = { ...stats, prebufferMs, warmupUnderruns: warm.underruns, log: pageLog };
  checkExact(stats, { decoder: 'webcodecs' });
  console.log(`E2E_FIGURES tokens ${JSON.stringify({ server: server.kind, prebufferMs, warmupUnderruns: warm.underruns, firstAudioMs: stats.firstAudioMs, serverFirstAudioMs: stats.serverFirstAudioMs, underruns: stats.underruns, audioMs: stats.audioMs })}`);
  assert.equal(prebufferMs, 60, 'the measured run starts from the default pre-buffer');
  assert.equal(stats.underruns, 0, `underruns (page log: ${JSON.stringify(pageLog)})`);
});

test('live captions: the demo highlights each word while it plays', async () => {
  await openDemo();
  await page.fill('#text', SENTENCE);
  await page.click('#speak');
  await page.waitForFunction(() => document.querySelector('#captions .word.current'), null, { timeout: 30000, polling: POLL_MS });
  const during = await page.evaluate(() => ({
    state: document.body.dataset.state,
    current: document.querySelectorAll('#captions .word.current').length,
  }));
  assert.equal(during.state, 'speaking', 'a word is highlighted while the audio plays');
  assert.equal(during.current, 1);
  await page.waitForFunction(() => document.body.dataset.state !== 'speaking', null, { timeout: 60000, polling: POLL_MS });
  const after = await page.evaluate(() => ({
    state: document.body.dataset.state,
    words: [...document.querySelectorAll('#captions .word')].map((s) => s.textContent),
    played: document.querySelectorAll('#captions .word.played').length,
    current: document.querySelectorAll('#captions .word.current').length,
    caption: document.getElementById('captions').textContent,
    log: window.emostreamDemo.wordLog,
    stats: window.emostreamDemo.lastStats,
  }));
  await page.screenshot({ path: join(ARTIFACTS, 'e2e-captions.png'), fullPage: true });
  const expected = SENTENCE.match(/[A-Za-z']+/g);
  assert.equal(after.state, 'idle');
  assert.deepEqual(after.words, expected, 'every word of the text, in order');
  assert.equal(after.caption, SENTENCE.slice(0, -1), 'laid out as typed, up to the last word');
  assert.equal(after.played, expected.length);
  assert.equal(after.current, 0);
  assert.deepEqual(after.log.map((w) => w.word), expected, 'one word event per word, in order');
  assert.deepEqual(after.stats.wordsPlayed.map((w) => w.word), expected);
  // The highlight follows the playback clock, not the arrival of the words (which come ahead
  // of the audio, faster than real time): no word lights up before its audio has played.
  const first = after.log[0];
  for (const w of after.log) {
    const early = (w.startMs - first.startMs) - (w.at - first.at);
    assert.ok(early < 60, `"${w.word}" lit ${early.toFixed(0)} ms before its audio`);
  }
  const last = after.log[after.log.length - 1];
  figures.runs.captions = { words: after.log.length, audioSpanMs: last.startMs - first.startMs, wallSpanMs: last.at - first.at };
  assert.deepEqual(pageErrors, []);
});

test('barge-in: Stop silences playback at once and the page returns to idle', async () => {
  await openDemo();
  await page.fill('#text', LONG_TEXT);
  await page.click('#speak');
  await page.waitForFunction(() => (window.emostreamDemo.client.player.stats.samplesPlayed || 0) > 48000 * 0.3, null, { timeout: 30000, polling: POLL_MS });
  const t0 = Date.now();
  await page.click('#stop');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 10000, polling: POLL_MS });
  const stopMs = Date.now() - t0;
  const a = await page.evaluate(() => window.emostreamDemo.client.player.stats);
  await new Promise((r) => setTimeout(r, 300));
  const b = await page.evaluate(() => window.emostreamDemo.client.player.stats);
  const stats = await page.evaluate(() => window.emostreamDemo.lastStats);
  figures.runs.bargeIn = { stopMs, playedAtStop: a.samplesPlayed, cancelled: stats.cancelled };
  assert.equal(stats.cancelled, true);
  assert.equal(b.samplesPlayed, a.samplesPlayed, 'nothing plays after the cancel');
  assert.equal(b.state, 'idle');
  assert.ok(stats.samplesPlayed < stats.samplesDecoded || stats.audioMs < 8000, 'it was cut short');
  // The connection takes the next utterance.
  const next = await speakViaUi('Still here.');
  assert.equal(next.cancelled, false);
  assert.equal(next.samplesPlayed, next.samplesDecoded);
});

test('voices: Auto picks the default of the text\'s language, and a voice\'s sample plays', async () => {
  await openDemo();
  const got = await page.evaluate(async () => {
    const demo = window.emostreamDemo;
    const select = document.getElementById('voice');
    const sampleUrl = new URL(`v1/voices/${demo.voiceFor('Hello there')}/sample`, document.baseURI).href;
    const res = await fetch(sampleUrl);
    return {
      first: select.options[0].value,
      auto: select.options[0].textContent,
      en: demo.voiceFor('Hello there'),
      zh: demo.voiceFor('你好，欢迎来到直播间。'),
      defaults: demo.catalog.defaults,
      sample: { status: res.status, type: res.headers.get('content-type'), bytes: (await res.arrayBuffer()).byteLength },
    };
  });
  figures.runs.voices = got;
  assert.equal(got.first, '', 'the list opens on Auto');
  if (server.kind === 'real') {
    assert.equal(got.en, got.defaults.en);
    assert.equal(got.zh, got.defaults.zh || got.defaults.en);
    assert.equal(got.sample.status, 200);
    assert.equal(got.sample.type, 'audio/wav');
    assert.ok(got.sample.bytes > 24000, `sample of ${got.en}: ${got.sample.bytes} bytes`);
  }
  const stats = await speakViaUi('Hi there, this is the voice the page chose.');
  assert.deepEqual(stats.errors, []);
});

test('cloning: a reference clip is uploaded, or the page says cloning is unavailable', async () => {
  await openDemo();
  const rate = 16000;
  const clip = Float32Array.from({ length: rate * 3 }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 180 * i) / rate) * (0.6 + 0.4 * Math.sin((2 * Math.PI * 3 * i) / rate)));
  const wavPath = join(ARTIFACTS, 'reference.wav');
  writeFileSync(wavPath, Buffer.from(encodeWav(clip, rate)));
  await page.fill('#clone-name', 'e2e-clone');
  await page.setInputFiles('#clone-file', wavPath);
  await page.click('#clone');
  await page.waitForFunction(() => !/uploading/.test(document.getElementById('clone-status').textContent), null, { timeout: 60000, polling: POLL_MS });
  const status = await page.textContent('#clone-status');
  figures.runs.clone = { status };
  if (/ready/.test(status)) {
    const voices = await page.evaluate(() => window.emostreamDemo.voices.map((v) => v.id));
    assert.ok(voices.length >= 2, `new voice listed: ${voices}`);
  } else {
    assert.match(status, /does not offer cloning|cloning failed/);
  }
  assert.deepEqual(pageErrors.filter((e) => !/404|405|501|Failed to load resource/.test(e)), []);
});

test('microphone recording (fake device) produces a WAV clip for cloning', async () => {
  await openDemo();
  await page.click('#record');
  await page.waitForFunction(() => /recording/.test(document.getElementById('clone-status').textContent), null, { timeout: 10000, polling: POLL_MS });
  await new Promise((r) => setTimeout(r, 1500));
  await page.click('#record');
  await page.waitForFunction(() => /recorded/.test(document.getElementById('clone-status').textContent), null, { timeout: 10000, polling: POLL_MS });
  const clip = await page.evaluate(async () => {
    const src = document.getElementById('clone-preview').src;
    const buf = await (await fetch(src)).arrayBuffer();
    const v = new DataView(buf);
    const tag = String.fromCharCode(...new Uint8Array(buf, 0, 4));
    return { tag, bytes: buf.byteLength, rate: v.getUint32(24, true), channels: v.getUint16(22, true) };
  });
  figures.runs.microphone = clip;
  assert.equal(clip.tag, 'RIFF', 'converted to WAV');
  assert.equal(clip.channels, 1);
  const seconds = (clip.bytes - 44) / 2 / clip.rate;
  assert.ok(seconds > 1 && seconds < 3, `recorded ${seconds.toFixed(2)} s`);
  assert.deepEqual(pageErrors, []);
});
