// Open /live pages of a room in headless Chromium, wait until they have heard N utterances, and
// write what each page recorded (its probe: audio pushed, worklet reports, output timestamps,
// mouth frames released, frames sent to VTube Studio; its counters) as JSON. Used by the
// end-to-end test (test/live.e2e.test.mjs) and bench/live_lips_sync.py; publishing into the
// room is the caller's business.
//
//   node scripts/live_probe.mjs --base http://127.0.0.1:8000 --room main --token T \
//        [--pages 2] [--vts ws://127.0.0.1:8001] --utterances 3 --out session.json \
//        [--ready-file ready.json] [--screenshot live.png] [--page-query '&mouth=1&bg=%23123']
//        [--timeout-s 180]
//
// --ready-file is written once every page listens (a caller waits for it before publishing).

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

import { launchBrowser } from '../test/helpers/browser.mjs';

const POLL_MS = 50;

/** Open a /live page of the room; resolves once it listens. */
export async function openLivePage(context, base, room, token, { vts, extra = '' } = {}) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  let query = `room=${encodeURIComponent(room)}&token=${encodeURIComponent(token)}&probe=1${extra}`;
  if (vts) query += `&vts=${encodeURIComponent(vts)}`;
  await page.goto(new URL(`/live?${query}`, base).href);
  await page.evaluate(() => window.emostreamLive.ready);
  await page.waitForFunction(() => window.emostreamLive.state === 'listening', null, { timeout: 20000, polling: POLL_MS });
  if (vts) await page.waitForFunction(() => window.emostreamLive.vts.authenticated, null, { timeout: 20000, polling: POLL_MS });
  return { page, errors };
}

/** Wait until the page has heard `n` utterances to their end. */
export async function heard(page, n, timeoutMs = 180000) {
  await page.waitForFunction((count) => {
    const l = window.emostreamLive.listener;
    const p = l.player;
    return l.stats.utterances >= count && !l._current && l._live.length === 0
      && p.stats.state === 'idle';
  }, n, { timeout: timeoutMs, polling: POLL_MS });
}

/** What the page recorded. */
export async function record(page) {
  return page.evaluate(() => {
    const live = window.emostreamLive;
    const l = live.listener;
    const p = l.player;
    return {
      stats: { ...l.stats },
      player: { ...p.stats, samplesPushed: p.samplesPushed, sampleRate: p.sampleRate, outputLatency: p.context.outputLatency, baseLatency: p.context.baseLatency },
      decoder: l._last && l._last.decoder ? l._last.decoder.kind : null,
      words: live.words,
      caption: document.getElementById('captions').textContent,
      vts: live.vts ? { authenticated: live.vts.authenticated, sent: live.vts.sent } : null,
      probe: live.probe,
    };
  });
}

async function main() {
  const { values: o } = parseArgs({
    options: {
      base: { type: 'string' }, room: { type: 'string' }, token: { type: 'string' },
      pages: { type: 'string', default: '2' }, vts: { type: 'string' },
      utterances: { type: 'string', default: '1' }, out: { type: 'string' },
      'ready-file': { type: 'string' }, screenshot: { type: 'string' }, 'page-query': { type: 'string', default: '' },
      'timeout-s': { type: 'string', default: '180' },
    },
  });
  const browser = await launchBrowser();
  const pages = [];
  try {
    for (let i = 0; i < Number(o.pages); i++) {
      // One browser profile, a tab per page; the first drives VTube Studio when asked.
      pages.push(await openLivePage(browser.context, o.base, o.room, o.token, { vts: i === 0 ? o.vts : undefined, extra: o['page-query'] }));
    }
    if (o['ready-file']) writeFileSync(o['ready-file'], JSON.stringify({ pages: pages.length }));
    let shot = null;
    if (o.screenshot) {
      await pages[0].page.setViewportSize({ width: 1280, height: 720 }); // an OBS scene's shape
      // While the first utterance speaks: a word lit up on the first page (and, with the
      // stand-in avatar, its mouth well open: the page holds it still for the picture).
      await pages[0].page.evaluate(() => { window.emostreamLive.holdAbove = 0.6; });
      await pages[0].page.waitForFunction(() => (document.getElementById('mouth').hidden
        ? document.querySelector('#captions .word.current') : window.emostreamLive.still),
      null, { timeout: Number(o['timeout-s']) * 1000, polling: 10 });
      shot = pages[0].page.screenshot({ path: o.screenshot }).then(() => pages[0].page.evaluate(() => {
        window.emostreamLive.holdAbove = undefined;
        window.emostreamLive.still = false;
      }));
    }
    for (const { page } of pages) await heard(page, Number(o.utterances), Number(o['timeout-s']) * 1000);
    await shot;
    const out = [];
    for (const { page, errors } of pages) out.push({ ...(await record(page)), errors });
    const session = { date: new Date().toISOString(), browser: browser.context.browser()?.version() ?? 'chromium', pages: out };
    if (o.out) writeFileSync(o.out, `${JSON.stringify(session)}\n`);
    else process.stdout.write(`${JSON.stringify(session)}\n`);
  } finally {
    await browser.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
