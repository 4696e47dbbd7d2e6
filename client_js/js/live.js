// The /live page: an OBS browser source (or any page) that plays a room. docs/live.md.
//
//   /live?room=NAME&token=TOKEN          required: the room and its token (POST /v1/rooms)
//        &vts=1 | &vts=ws://host:8001    drive a VTube Studio model's mouth (its plugin API)
//        &queue=1                        show how many chat lines wait
//        &mouth=1                        draw a simple mouth (a stand-in avatar)
//        &captions=0                     no captions (audio, and the avatar, only)
//        &bg=%23102030                   a background colour (default: transparent)
//        &size=44                        caption size in px
//        &decoder=wasm                   force the wasm Opus decoder
//        &debug=1                        counters (frames, underruns, VTS)
//        &probe=1                        keep timing logs for tests and bench/live_lips_sync.py
//
// window.emostreamLive holds the RoomListener (`listener`), the VTS driver (`vts`), `ready`
// and, with probe=1, `probe` (what was heard when, what was sent to VTube Studio when).

import { RoomListener } from '../src/room-listener.js';
import { VTubeStudioDriver, VTS_DEFAULT_URL } from '../src/vts.js';

const $ = (id) => document.getElementById(id);
const q = new URLSearchParams(location.search);
const flag = (name) => q.get(name) === '1' || q.get(name) === 'true';
const epochMs = () => performance.timeOrigin + performance.now();

if (q.get('bg')) document.body.style.background = q.get('bg');
if (q.get('size')) document.documentElement.style.setProperty('--size', `${Number(q.get('size')) || 44}px`);
const showCaptions = q.get('captions') !== '0';
const live = { listener: null, vts: null, ready: null, probe: null, words: [], state: 'connecting' };
window.emostreamLive = live;

function status(text) {
  const box = $('status');
  box.hidden = !text;
  box.textContent = text || '';
}

function setState(state) {
  live.state = state;
  document.body.dataset.state = state;
}

const room = q.get('room');
const token = q.get('token');
if (!room || !token) {
  status('Add ?room=NAME&token=TOKEN to this page’s address (POST /v1/rooms gives both).');
  setState('refused');
} else {
  start();
}

function start() {
  const listener = new RoomListener({ room, token, decoder: q.get('decoder') || 'auto' });
  live.listener = listener;
  if (flag('probe')) live.probe = probe(listener);

  listener.on('open', () => {
    status('');
    setState('listening');
  });
  listener.on('close', () => {
    if (listener.refused) return;
    setState('connecting');
    status('reconnecting to the server…');
  });
  listener.on('error', (ev) => {
    if (listener.refused) {
      setState('refused');
      status(ev.code === 'room_refused'
        ? 'This room refused the page: no such room, or the token is wrong (POST /v1/rooms).'
        : `Refused: ${ev.message}`);
    } else if (!ev.local) {
      status(`${ev.code}: ${ev.message}`);
    }
  });
  listener.on('queue', (ev) => {
    if (!flag('queue')) return;
    $('queue').hidden = ev.depth === 0;
    $('queue').textContent = `${ev.depth} waiting`;
  });
  if (showCaptions) wireCaptions(listener);
  if (flag('mouth')) wireMouth(listener);
  if (q.get('vts')) live.vts = wireVts(listener, q.get('vts'));
  if (flag('debug')) wireDebug(listener);

  live.ready = listener.open().then(async () => {
    const ctx = listener.player && listener.player.context;
    if (ctx && ctx.state !== 'running') {
      // A normal browser tab waits for a click; OBS (and Chromium with autoplay allowed) does not.
      await ctx.resume().catch(() => {});
      if (ctx.state !== 'running') {
        const button = $('unmute');
        button.hidden = false;
        button.onclick = async () => {
          await ctx.resume();
          button.hidden = true;
        };
      }
    }
  }, (err) => {
    status(String(err.message || err));
  });
}

// -------------------------------------------------------------------------------- captions
// Each utterance's text (its segments) is laid out as words arrive, and each word lights up
// when it is heard; the caption fades a moment after the last word.
function wireCaptions(listener) {
  const box = $('captions');
  let text = '';
  let cursor = 0;
  let spans = [];
  let fade = null;

  listener.on('started', () => {
    clearTimeout(fade);
    box.classList.remove('fading');
    box.replaceChildren();
    text = '';
    cursor = 0;
    spans = [];
  });
  listener.on('segment', (ev) => {
    text += (text && !/\s$/.test(text) ? ' ' : '') + ev.text;
  });
  listener.on('words', (ev) => {
    for (const w of ev.words) {
      const at = text.indexOf(w.word, cursor);
      const gap = at >= 0 ? text.slice(cursor, at) : ' ';
      if (gap && box.childNodes.length) box.appendChild(document.createTextNode(gap));
      const span = document.createElement('span');
      span.className = 'word';
      span.textContent = w.word;
      box.appendChild(span);
      spans.push(span);
      if (at >= 0) cursor = at + w.word.length;
    }
  });
  listener.on('word', (w) => {
    live.words.push({ word: w.word, utterance: w.utterance, startMs: w.start_ms, at: epochMs() });
    const i = spans.findIndex((s) => !s.classList.contains('played') && !s.classList.contains('current')
      && s.textContent === w.word);
    for (const s of box.querySelectorAll('.word.current')) {
      s.classList.remove('current');
      s.classList.add('played');
    }
    if (i >= 0) {
      for (const s of spans.slice(0, i)) s.classList.add('played');
      spans[i].classList.add('current');
    }
  });
  listener.on('done', (ev) => {
    if (cursor < text.length && !ev.cancelled) box.appendChild(document.createTextNode(text.slice(cursor)));
  });
  listener.on('mouth', (f) => {
    if (f.viseme !== 'sil' || f.t >= 0) return; // the rest after an utterance: fade soon
    clearTimeout(fade);
    fade = setTimeout(() => {
      for (const s of box.querySelectorAll('.word.current')) s.classList.replace('current', 'played');
      box.classList.add('fading');
    }, 2500);
  });
}

// -------------------------------------------------------------------------------- avatars
function wireMouth(listener) {
  $('mouth').hidden = false;
  const lips = $('lips');
  listener.on('mouth', (f) => {
    if (live.still) return; // held still for a screenshot (scripts/live_probe.mjs)
    lips.style.height = `${4 + 36 * f.open}%`;
    lips.style.width = `calc(var(--size) * ${(1.4 + 0.5 * f.form).toFixed(2)})`;
    // A screenshot's moment (scripts/live_probe.mjs): hold the face still once it speaks.
    if (live.holdAbove !== undefined && f.open > live.holdAbove && document.querySelector('#captions .word.current')) {
      live.still = true;
    }
  });
}

function wireVts(listener, value) {
  const url = value === '1' || value === 'true' ? VTS_DEFAULT_URL : value;
  const vts = new VTubeStudioDriver({ url });
  const log = live.probe ? live.probe.vts : null;
  let connecting = null;
  const connect = () => {
    connecting = connecting || vts.connect().then((ok) => {
      if (!ok) status('VTube Studio did not allow the plugin (allow it in VTube Studio, reload).');
    }, (err) => {
      status(String(err.message || err));
      setTimeout(() => { connecting = null; connect(); }, 5000);
    });
  };
  vts.on('close', () => {
    connecting = null;
    setTimeout(connect, 2000);
  });
  listener.on('mouth', (f) => {
    if (vts.mouth(f) && log) log.push({ utterance: f.utterance, t: f.t, open: f.open, at: epochMs() });
  });
  connect();
  return vts;
}

// -------------------------------------------------------------------------------- debugging
function wireDebug(listener) {
  const pre = $('debug');
  pre.hidden = false;
  setInterval(() => {
    const p = listener.player;
    const s = listener.stats;
    pre.textContent = [
      `room ${room} · ${live.state}`,
      `utterances ${s.utterances} · packets ${s.packets}`,
      `played ${p ? (p.stats.samplesPlayed / p.sampleRate).toFixed(1) : 0} s · underruns ${s.underruns}`,
      `pre-buffer ${p ? p.stats.prebufferMs : 0} ms`,
      live.vts ? `VTube Studio ${live.vts.authenticated ? 'on' : 'off'} · ${live.vts.sent} sent` : '',
    ].filter(Boolean).join('\n');
  }, 250);
}

// -------------------------------------------------------------------------------- probe
// Timing logs for the end-to-end test and bench/live_lips_sync.py, kept apart from the clock
// the page plays by: the audio pushed to the player (20 ms RMS blocks on the player's
// timeline, and where each utterance starts on it), the worklet's reports (context frame ↔
// samples played) and the context's output timestamps (context time ↔ page time, the output
// latency included). From these, when each 20 ms of audio was heard, in page time.
function probe(listener) {
  const out = { timeOrigin: performance.timeOrigin, rate: 48000, blocks: [], starts: [],
                reports: [], stamps: [], mouth: [], vts: [] };
  const block = 960;
  let partial = [];
  const player = listener.player;
  if (!player) return out;
  const push = player.push.bind(player);
  player.push = (samples, rate) => {
    const src = rate === player.sampleRate ? samples.slice() : null; // push() transfers them
    const before = player.samplesPushed;
    push(samples, rate);
    const n = player.samplesPushed - before; // samples at the player's rate (resampled)
    // Energy per 20 ms block of the player's timeline (from the samples given, when unresampled).
    for (let i = 0; i < n; i++) {
      partial.push(src ? src[i] : 0);
      if (partial.length === block) {
        let e = 0;
        for (const x of partial) e += x * x;
        out.blocks.push(Math.sqrt(e / block));
        partial = [];
      }
    }
  };
  player.on('stats', (m) => {
    if (typeof m.frame === 'number') out.reports.push([m.frame, m.samplesPlayed, performance.now()]);
  });
  listener.on('playing', (ev) => {
    out.rate = player.sampleRate;
    if (ev.base === 0) { partial = []; out.blocks = []; } // a new timeline (the player began)
    out.starts.push({ utterance: ev.utterance, base: ev.base, delayMs: ev.delayMs });
  });
  listener.on('mouth', (f) => {
    out.mouth.push({ utterance: f.utterance, t: f.t, open: f.open, at: epochMs() });
  });
  setInterval(() => {
    const ctx = player.context;
    if (!ctx || typeof ctx.getOutputTimestamp !== 'function') return;
    const ts = ctx.getOutputTimestamp();
    if (ts.performanceTime) out.stamps.push([ts.contextTime, ts.performanceTime]);
  }, 100);
  return out;
}
