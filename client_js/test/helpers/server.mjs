// Start the EmoStream server for the end-to-end test: the real one (python -m emostream serve)
// when it is importable, else the fake fixture server. EMOSTREAM_E2E_SERVER=real|fake forces
// the choice; EMOSTREAM_PYTHON picks the interpreter (default: <repo>/.venv/bin/python).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLIENT_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const REPO_ROOT = join(CLIENT_DIR, '..');

export function pythonPath() {
  if (process.env.EMOSTREAM_PYTHON) return process.env.EMOSTREAM_PYTHON;
  const venv = join(REPO_ROOT, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

function realServerAvailable(python) {
  if (!existsSync(join(REPO_ROOT, 'server', 'emostream', '__main__.py'))) return false;
  const r = spawnSync(python, ['-m', 'emostream', 'serve', '--help'], {
    env: { ...process.env, PYTHONPATH: join(REPO_ROOT, 'server') },
    encoding: 'utf8',
    timeout: 60000,
  });
  return r.status === 0;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitReady(base, proc, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let lastErr = null;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}`);
    try {
      const res = await fetch(new URL('v1/voices', base));
      if (res.ok) return;
      lastErr = new Error(`GET /v1/voices: ${res.status}`);
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server not ready after ${timeoutMs} ms: ${lastErr && lastErr.message}`);
}

/**
 * @param {object} [o]
 * @param {'auto'|'real'|'fake'} [o.kind]
 * @param {string[]} [o.fakeArgs] extra arguments for the fake server
 * @returns {Promise<{kind: string, base: string, port: number, log: () => string, stop: () => Promise<void>}>}
 */
export async function startServer({ kind = process.env.EMOSTREAM_E2E_SERVER || 'auto', fakeArgs = [] } = {}) {
  const python = pythonPath();
  if (kind === 'auto') kind = realServerAvailable(python) ? 'real' : 'fake';
  const port = await freePort();
  const args = kind === 'real'
    ? ['-m', 'emostream', 'serve', '--host', '127.0.0.1', '--port', String(port)]
    : [join(CLIENT_DIR, 'test', 'fixtures', 'fake_server.py'), '--port', String(port), '--root', CLIENT_DIR, ...fakeArgs];
  const proc = spawn(python, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, PYTHONPATH: join(REPO_ROOT, 'server'), PYTHONUNBUFFERED: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  const base = `http://127.0.0.1:${port}/`;
  try {
    await waitReady(base, proc, kind === 'real' ? 120000 : 20000);
  } catch (err) {
    proc.kill('SIGTERM');
    throw new Error(`${kind} server failed to start: ${err.message}\n${output}`);
  }
  return {
    kind,
    base,
    port,
    log: () => output,
    stop: () => new Promise((resolve) => {
      if (proc.exitCode !== null) return resolve();
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      proc.kill('SIGTERM');
    }),
  };
}
