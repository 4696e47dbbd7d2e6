// Demo page logic. Page options in the query string:
//   ?decoder=auto|webcodecs|wasm   force a decoder path (wasm = opus-decoder fallback)
//   ?format=opus/48000             initial output format (also a select on the page)
//   ?server=http://host:port/      talk to another server than the page's origin
//   ?prebuffer=60                  initial pre-buffer in ms (default 60)
// For scripts and tests: window.emostreamDemo = {client, lastStats, ready, speak(text, opts),
// stream(text, opts), cancel(), wordLog} and document.body.dataset.state = idle | speaking | error.
// Live captions: every utterance asks for word timestamps; #captions shows its words, the one
// playing now (by the player's clock) highlighted; wordLog lists the word events as they fired.

import { EmoStreamClient } from '../src/emostream-client.js';
import { voiceCatalog, defaultVoiceFor, sampleUrl, cloneVoice, cloningUnavailable } from '../src/voices-api.js';
import { downmix, encodeWav } from '../src/wav.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const serverBase = params.get('server') || undefined;
const wsUrl = (() => {
  const u = new URL('v1/stream', serverBase || document.baseURI);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
})();

const client = new EmoStreamClient({
  url: wsUrl,
  decoder: params.get('decoder') || 'auto',
  playerOptions: { prebufferMs: Number(params.get('prebuffer') || 60) },
});

const demo = {
  client,
  lastStats: null,
  voices: [],
  catalog: { voices: [], defaults: {} }, // GET /v1/voices
  voiceFor, // the voice a text is spoken with: the one chosen, else its language's default
  ready: null,
  speak: (text, opts) => run(() => client.speak(text, startOptions(opts, text)), text),
  stream: (text, opts) => run(() => streamTokens(text, startOptions(opts, text)), (text.match(/\S+\s*/g) || []).join('')),
  cancel: () => client.cancel(),
  wordLog: [], // {word, index, startMs, at}: each word event, `at` on performance.now()
};
window.emostreamDemo = demo;

// ------------------------------------------------------------------ state & log
function setState(state) {
  document.body.dataset.state = state;
  $('state').textContent = state;
  scheduleDraw();
}

function log(text, cls) {
  const li = document.createElement('li');
  li.textContent = `${new Date().toISOString().slice(11, 23)}  ${text}`;
  if (cls) li.className = cls;
  const list = $('log');
  list.appendChild(li);
  while (list.children.length > 200) list.removeChild(list.firstChild);
  list.scrollTop = list.scrollHeight;
}

const fmtMs = (v) => (typeof v === 'number' && Number.isFinite(v) ? `${v.toFixed(0)} ms` : '–');

// ------------------------------------------------------------------ controls
for (const [id, digits] of [['intensity', 2], ['speed', 2], ['pitch', 0], ['energy', 2]]) {
  const input = $(id);
  const out = $(`${id}-out`);
  const show = () => (out.textContent = Number(input.value).toFixed(digits));
  input.addEventListener('input', show);
  show();
}
if (params.get('format')) $('format').value = params.get('format');

/** The voice chosen in the list, or (Auto) the default of `text`'s language on this server. */
function voiceFor(text) {
  return $('voice').value || defaultVoiceFor(text, demo.catalog);
}

function startOptions(overrides = {}, text = $('text').value) {
  const [codec, rate] = $('format').value.split('/');
  const o = { voice: voiceFor(text), format: { codec, sample_rate: Number(rate) }, word_timestamps: true };
  const emotion = $('emotion').value;
  // Send only what differs from the defaults, so voices without a control still accept the start.
  if (emotion !== 'neutral') {
    o.emotion = emotion;
    o.intensity = Number($('intensity').value);
  }
  const speed = Number($('speed').value);
  if (speed !== 1) o.speed = speed;
  const pitch = Number($('pitch').value);
  if (pitch !== 0) o.pitch_shift = pitch;
  const energy = Number($('energy').value);
  if (energy !== 1) o.energy = energy;
  return { ...o, ...overrides };
}

function applyVoiceControls(controls) {
  // controls: array of names (GET /v1/voices) or {name: bool} (started event)
  const supported = Array.isArray(controls)
    ? new Set(controls)
    : new Set(Object.entries(controls || {}).filter(([, ok]) => ok).map(([k]) => k));
  const known = supported.size > 0;
  for (const input of document.querySelectorAll('[data-control]')) {
    const ok = !known || supported.has(input.dataset.control);
    input.disabled = !ok;
    input.title = ok ? '' : 'this voice does not support it';
  }
  $('emotion').disabled = known && !supported.has('emotion');
}

async function loadVoices(selectId) {
  try {
    demo.catalog = await voiceCatalog({ baseUrl: serverBase });
  } catch (err) {
    log(`voices: ${err.message}`, 'error');
    demo.catalog = { voices: [], defaults: {} };
  }
  demo.voices = demo.catalog.voices;
  const select = $('voice');
  select.replaceChildren();
  const auto = document.createElement('option');
  auto.value = '';
  const defaults = Object.entries(demo.catalog.defaults).map(([lang, id]) => `${id} for ${lang === 'zh' ? 'Mandarin' : lang === 'en' ? 'English' : lang}`);
  auto.textContent = `Auto by language${defaults.length ? `: ${defaults.join(', ')}` : ''}`;
  select.appendChild(auto);
  const groups = new Map(); // language -> optgroup, in the order the server lists them
  for (const v of demo.voices) {
    const label = v.type === 'cloned' ? 'cloned' : v.language || 'other';
    if (!groups.has(label)) {
      const group = document.createElement('optgroup');
      group.label = label === 'cloned' ? 'Your cloned voices' : label;
      groups.set(label, group);
    }
    const opt = document.createElement('option');
    opt.value = v.id;
    opt.textContent = v.type === 'cloned'
      ? `${v.name || v.id}${v.speakable === false ? ' (unavailable)' : ''}`
      : [v.id, v.gender, v.description].filter(Boolean).join(' · ');
    opt.title = v.description || '';
    groups.get(label).appendChild(opt);
  }
  for (const group of groups.values()) select.appendChild(group);
  if (selectId) select.value = selectId;
  onVoiceChange();
}

function onVoiceChange() {
  const id = voiceFor($('text').value);
  const v = demo.voices.find((x) => x.id === id);
  applyVoiceControls(v ? v.controls : null);
  $('sample').disabled = !v || v.speakable === false;
  $('sample').title = v ? `hear ${v.type === 'cloned' ? v.name : v.id}` : '';
}
$('voice').addEventListener('change', onVoiceChange);
$('text').addEventListener('input', () => $('voice').value || onVoiceChange()); // Auto follows the text

$('sample').addEventListener('click', () => {
  const id = voiceFor($('text').value);
  if (!id) return;
  const audio = $('voice-sample');
  audio.src = sampleUrl(id, serverBase);
  audio.play().catch((err) => log(`sample of ${id}: ${err.message}`, 'error'));
  log(`sample of ${id}`);
});

// ------------------------------------------------------------------ waveform
const canvas = $('wave');
const g = canvas.getContext('2d');
const BLOCK = 480; // envelope block: 10 ms at 48 kHz
let envelope = []; // [min, max] per block of the utterance's decoded audio
let blockAcc = { n: 0, lo: 0, hi: 0 };

function resetEnvelope() {
  envelope = [];
  blockAcc = { n: 0, lo: 0, hi: 0 };
}

client.on('audio', ({ samples, sampleRate }) => {
  const block = Math.round((BLOCK * sampleRate) / 48000);
  for (let i = 0; i < samples.length; i++) {
    const x = samples[i];
    if (x < blockAcc.lo) blockAcc.lo = x;
    if (x > blockAcc.hi) blockAcc.hi = x;
    if (++blockAcc.n === block) {
      envelope.push([blockAcc.lo, blockAcc.hi]);
      blockAcc = { n: 0, lo: 0, hi: 0 };
    }
  }
});

// Redraw only while speaking (at most ~25 frames/s) and once after a change: a busy canvas in
// a software-rendered browser would take CPU from the decoder and the server on small machines.
let drawPending = false;
let lastDraw = 0;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(frame);
}
function frame(now) {
  drawPending = false;
  const speaking = document.body.dataset.state === 'speaking';
  if (!speaking || now - lastDraw >= 40) {
    lastDraw = now;
    draw();
  }
  if (speaking) scheduleDraw();
}

function draw() {
  const w = canvas.width;
  const h = canvas.height;
  g.fillStyle = '#0b0f13';
  g.fillRect(0, 0, w, h);
  g.strokeStyle = '#26313c';
  g.beginPath();
  g.moveTo(0, h / 2);
  g.lineTo(w, h / 2);
  g.stroke();
  // Utterance envelope, with the played part brighter.
  const n = envelope.length;
  if (n > 0) {
    // Whole utterance across the canvas (at least 10 s wide, so short ones are not stretched).
    const span = Math.max(n, 1000);
    const played = client.player ? (client.player.stats.samplesPlayed / client.player.sampleRate) * 100 : n;
    for (let x = 0; x < w; x++) {
      const a = Math.floor((x * span) / w);
      if (a >= n) break;
      const b = Math.min(n, Math.max(a + 1, Math.floor(((x + 1) * span) / w)));
      let lo = 0;
      let hi = 0;
      for (let i = a; i < b; i++) {
        if (envelope[i][0] < lo) lo = envelope[i][0];
        if (envelope[i][1] > hi) hi = envelope[i][1];
      }
      g.fillStyle = a < played ? '#4cc2ff' : '#2d5870';
      const y0 = h / 2 - hi * (h / 2);
      const y1 = h / 2 - lo * (h / 2);
      g.fillRect(x, y0, 1, Math.max(1, y1 - y0));
    }
  }
  // Live oscilloscope from the analyser, drawn thin on top.
  const analyser = client.player && client.player.analyser;
  if (analyser && document.body.dataset.state === 'speaking') {
    const buf = new Float32Array(analyser.fftSize);
    analyser.getFloatTimeDomainData(buf);
    g.strokeStyle = 'rgba(255, 255, 255, 0.55)';
    g.beginPath();
    for (let i = 0; i < buf.length; i++) {
      const x = (i / buf.length) * w;
      const y = h / 2 - buf[i] * (h / 2);
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    }
    g.stroke();
  }
}
scheduleDraw();

// ------------------------------------------------------------------ live readout
function showStats(s) {
  const p = client.player;
  $('m-first').textContent = fmtMs(s.firstAudioMs);
  $('m-packet').textContent = fmtMs(s.firstPacketMs);
  $('m-server').textContent = fmtMs(s.serverFirstAudioMs);
  const u = $('m-underruns');
  u.textContent = String(s.underruns ?? '–');
  u.className = s.underruns ? 'bad' : 'ok';
  const rate = s.sampleRate || (p ? p.sampleRate : 48000);
  const playedMs = ((s.samplesPlayed || 0) / rate) * 1000;
  $('m-played').textContent = `${playedMs.toFixed(0)} / ${s.audioMs == null ? '…' : s.audioMs.toFixed(0)} ms`;
  $('m-prebuffer').textContent = p ? fmtMs(p.stats.prebufferMs) : '–';
  $('m-decoder').textContent = s.decoder || '–';
  $('m-rtf').textContent = typeof s.rtf === 'number' ? s.rtf.toFixed(3) : '–';
}

client.on('playing', ({ firstAudioMs }) => {
  $('m-first').textContent = fmtMs(firstAudioMs);
  log(`first audio after ${firstAudioMs.toFixed(1)} ms`);
});
client.on('underrun', (ev) => {
  $('m-underruns').textContent = String(ev.underruns);
  $('m-underruns').className = 'bad';
  $('m-prebuffer').textContent = fmtMs(ev.prebufferMs);
  log(`underrun #${ev.underruns}; pre-buffer now ${ev.prebufferMs} ms`, 'error');
});
let lastReadout = 0;
client.on('stats', (ev) => {
  const t = performance.now();
  if (t - lastReadout < 100) return;
  lastReadout = t;
  const rate = client.player ? client.player.sampleRate : 48000;
  const sent = client.player ? client.player.samplesPushed : 0;
  $('m-played').textContent = `${((ev.samplesPlayed / rate) * 1000).toFixed(0)} / ${((sent / rate) * 1000).toFixed(0)} ms`;
});
client.on('started', (ev) => {
  applyVoiceControls(ev.controls);
  log(`started ${ev.stream_id} · ${ev.voice} · ${ev.codec} ${ev.sample_rate} Hz`);
});
client.on('segment', (ev) => {
  $('segment').textContent = ev.text;
  log(`segment ${ev.index}: ${ev.text}`);
});
client.on('done', (ev) => {
  log(`done: ${Number(ev.audio_ms).toFixed(0)} ms audio, server first audio ${fmtMs(ev.first_audio_ms)}${ev.cancelled ? ', cancelled' : ''}`);
});
client.on('error', (ev) => log(`error ${ev.code}: ${ev.message}`, 'error'));
client.on('close', (ev) => {
  $('conn').textContent = `disconnected (${ev.code})`;
  $('conn').className = 'pill bad';
});
client.on('open', () => {
  $('conn').textContent = 'connected';
  $('conn').className = 'pill ok';
});

// ------------------------------------------------------------------ live captions
// Words are laid out as they are announced (with the text between them as it was typed), and
// marked as the playback clock reaches them: `current` the word playing, `played` those before.
let captionText = []; // the utterance's text as code points (the server's offsets count them)
let captionEnd = 0; // code point after the last word laid out
let captionSpans = [];

function resetCaptions(text) {
  captionText = Array.from(text || '');
  captionEnd = 0;
  captionSpans = [];
  $('captions').replaceChildren();
  demo.wordLog = [];
}

client.on('words', (ev) => {
  const box = $('captions');
  for (const w of ev.words) {
    const same = captionText.slice(w.char_start, w.char_end).join('') === w.word;
    const gap = same ? captionText.slice(captionEnd, w.char_start).join('') : ' ';
    if (gap && box.childNodes.length) box.appendChild(document.createTextNode(gap));
    const span = document.createElement('span');
    span.className = 'word';
    span.textContent = w.word;
    span.title = `${w.start_ms.toFixed(0)}–${w.end_ms.toFixed(0)} ms`;
    box.appendChild(span);
    captionSpans.push(span);
    if (same) captionEnd = w.char_end;
  }
});

client.on('word', (w) => {
  demo.wordLog.push({ word: w.word, index: w.index, startMs: w.start_ms, at: performance.now() });
  for (let i = 0; i < w.index && i < captionSpans.length; i++) {
    captionSpans[i].classList.remove('current');
    captionSpans[i].classList.add('played');
  }
  const span = captionSpans[w.index];
  if (span) span.classList.add('current');
});

function finishCaptions(stats) {
  // Played to the end: every word is done; cut short: those heard stay marked, the rest not.
  const played = new Set((stats.wordsPlayed || []).map((w) => w.index));
  captionSpans.forEach((span, i) => {
    span.classList.remove('current');
    span.classList.toggle('played', played.has(i));
  });
}

// ------------------------------------------------------------------ speaking
let runs = 0;
async function run(fn, text) {
  const mine = ++runs;
  resetEnvelope();
  resetCaptions(text);
  setState('speaking');
  try {
    const stats = await fn();
    demo.lastStats = {
      firstAudioMs: stats.firstAudioMs,
      underruns: stats.underruns,
      samplesPlayed: stats.samplesPlayed,
      audioMs: stats.audioMs,
      firstPacketMs: stats.firstPacketMs,
      serverFirstAudioMs: stats.serverFirstAudioMs,
      samplesDecoded: stats.samplesDecoded,
      sampleRate: stats.sampleRate,
      decoder: stats.decoder,
      cancelled: stats.cancelled,
      packets: stats.packets,
      errors: stats.errors,
      wordsPlayed: stats.wordsPlayed,
      wordsSent: stats.wordsSent,
    };
    if (mine === runs) finishCaptions(stats);
    showStats(stats);
    if (mine === runs) setState('idle');
    return demo.lastStats;
  } catch (err) {
    log(`failed: ${err.message}`, 'error');
    if (client.lastStats) showStats(client.lastStats);
    if (mine === runs) setState('error');
    throw err;
  }
}

async function streamTokens(text, options) {
  if (!client.connected) await client.open();
  await client.player?.resume();
  const done = client.start(options);
  // Word by word, ~25 ms apart, as an LLM would produce them.
  for (const token of text.match(/\S+\s*/g) || []) {
    if (!client.busy) break; // cancelled
    client.write(token);
    await new Promise((r) => setTimeout(r, 25));
  }
  if (client.busy && client.state !== 'cancelling') client.end();
  return done;
}

async function interruptThen(fn) {
  if (client.busy) await client.cancel();
  return fn().catch(() => {});
}

$('speak').addEventListener('click', () => interruptThen(() => demo.speak($('text').value)));
$('stream').addEventListener('click', () => interruptThen(() => demo.stream($('text').value)));
$('stop').addEventListener('click', () => client.cancel());
$('text').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) $('speak').click();
});

// ------------------------------------------------------------------ cloning
let recorded = null; // Blob (WAV) from the microphone
let recorder = null;

function cloneStatus(text, cls = '') {
  $('clone-status').textContent = text;
  $('clone-status').className = `status ${cls}`;
}

async function toWav(blob) {
  // Decode whatever the browser can read and re-encode as mono 16-bit WAV at the context rate.
  const ctx = client.player?.context || new OfflineAudioContext(1, 1, 48000);
  try {
    const audio = await ctx.decodeAudioData(await blob.arrayBuffer());
    return new Blob([encodeWav(downmix(audio), audio.sampleRate)], { type: 'audio/wav' });
  } catch {
    return blob; // let the server try the original
  }
}

$('clone-file').addEventListener('change', () => {
  recorded = null;
  const f = $('clone-file').files[0];
  if (f) {
    $('clone-preview').src = URL.createObjectURL(f);
    $('clone-preview').hidden = false;
  }
});

$('record').addEventListener('click', async () => {
  if (recorder && recorder.state === 'recording') {
    recorder.stop();
    return;
  }
  try {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false } });
    const chunks = [];
    recorder = new MediaRecorder(stream);
    recorder.ondataavailable = (e) => e.data.size && chunks.push(e.data);
    recorder.onstop = async () => {
      stream.getTracks().forEach((t) => t.stop());
      $('record').textContent = '● Record';
      $('record').classList.remove('recording');
      recorded = await toWav(new Blob(chunks, { type: recorder.mimeType }));
      $('clone-preview').src = URL.createObjectURL(recorded);
      $('clone-preview').hidden = false;
      cloneStatus(`recorded ${(recorded.size / 1024).toFixed(0)} KiB`);
    };
    recorder.start();
    $('record').textContent = '■ Stop';
    $('record').classList.add('recording');
    cloneStatus('recording… (3–10 s)');
    setTimeout(() => recorder && recorder.state === 'recording' && recorder.stop(), 12000);
  } catch (err) {
    cloneStatus(`microphone: ${err.message}`, 'bad');
  }
});

$('clone').addEventListener('click', async () => {
  const name = $('clone-name').value.trim();
  const file = recorded || $('clone-file').files[0];
  if (!name) return cloneStatus('give the voice a name', 'bad');
  if (!file) return cloneStatus('choose a clip or record one', 'bad');
  cloneStatus('uploading…');
  try {
    const wav = recorded || (await toWav(file));
    const voice = await cloneVoice({ name, file: wav, baseUrl: serverBase });
    cloneStatus(`voice “${voice.name || voice.id}” ready (${voice.id})`, 'ok');
    log(`cloned voice ${voice.id} (${voice.name || ''})`);
    await loadVoices(voice.id);
  } catch (err) {
    cloneStatus(cloningUnavailable(err) ? 'this server does not offer cloning yet' : `cloning failed: ${err.message}`, 'bad');
  }
});

// ------------------------------------------------------------------ start-up
setState('idle');
demo.ready = (async () => {
  await loadVoices();
  try {
    await client.open();
  } catch (err) {
    log(err.message, 'error');
    $('conn').textContent = 'no connection';
    $('conn').className = 'pill bad';
  }
})();
