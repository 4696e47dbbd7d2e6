// HTTP helpers beside the stream: GET /v1/voices and POST /v1/voices (cloning).

/** Error with the HTTP status and the server's error code when it sent one. */
export class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
  }
}

async function readError(res) {
  let code = `http_${res.status}`;
  let message = `${res.status} ${res.statusText || ''}`.trim();
  try {
    const body = await res.json();
    const err = body && (body.error || body);
    if (err && typeof err === 'object') {
      if (err.code) code = String(err.code);
      if (err.message || err.detail) message = String(err.message || err.detail);
    } else if (typeof err === 'string') {
      message = err;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new HttpError(res.status, code, message);
}

/**
 * List the server's voices.
 * @param {object} [o]
 * @param {string} [o.baseUrl] e.g. 'http://host:8000/'; default: relative to the page
 * @param {typeof fetch} [o.fetch]
 * @returns {Promise<Array<{id: string, model?: string, language?: string, sample_rate?: number,
 *   controls?: string[], description?: string}>>}
 */
export async function listVoices({ baseUrl, fetch: f = globalThis.fetch } = {}) {
  const res = await f(resolve('v1/voices', baseUrl));
  if (!res.ok) throw await readError(res);
  const body = await res.json();
  return Array.isArray(body.voices) ? body.voices : [];
}

/**
 * Create a cloned voice from a reference clip. Resolves with the new voice ({id, ...}).
 * Throws HttpError; status 404/405/501 means this server has no cloning.
 * @param {object} o
 * @param {string} o.name
 * @param {Blob} o.file
 * @param {string} [o.filename='reference.wav']
 * @param {string} [o.baseUrl]
 * @param {typeof fetch} [o.fetch]
 */
export async function cloneVoice({ name, file, filename = 'reference.wav', baseUrl, fetch: f = globalThis.fetch }) {
  const form = new FormData();
  form.append('name', name);
  form.append('file', file, filename);
  const res = await f(resolve('v1/voices', baseUrl), { method: 'POST', body: form });
  if (!res.ok) throw await readError(res);
  const body = await res.json();
  const voice = body && (body.voice || body);
  if (!voice || typeof voice.id !== 'string') return { id: name, ...voice };
  return voice;
}

/** True when an HttpError says the server does not offer cloning. */
export function cloningUnavailable(err) {
  return err instanceof HttpError && [404, 405, 501].includes(err.status);
}

function resolve(path, baseUrl) {
  if (baseUrl) return new URL(path, baseUrl).href;
  const base = globalThis.document ? globalThis.document.baseURI : globalThis.location && globalThis.location.href;
  return base ? new URL(path, base).href : path;
}
