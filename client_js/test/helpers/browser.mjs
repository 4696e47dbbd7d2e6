// Launch Debian's Chromium through playwright-core (no browser download), headless, with a
// fresh profile. Headless Chromium without a sound card still runs an AudioContext (it falls
// back to a fake audio output that consumes samples in real time), so no audio flags are
// needed for playback; the fake media-stream flags only serve microphone recording.

import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
  '--use-fake-ui-for-media-stream',
  '--use-fake-device-for-media-stream',
];

export function chromiumPath() {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean);
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error('no Chromium found: apt-get install -y chromium (or set CHROMIUM_PATH)');
  return found;
}

/** Returns {context, page, close()}. */
export async function launchBrowser() {
  const profile = mkdtempSync(join(tmpdir(), 'emostream-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 1000 },
  });
  const page = context.pages()[0] || (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
