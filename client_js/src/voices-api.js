// HTTP helpers beside the stream: GET /v1/voices (the catalogue, samples, the default voice of
// a text's language) and POST /v1/voices (cloning).

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
 * The server's voice catalogue (GET /v1/voices): the voices, the default voice of each
 * language (`defaults`, e.g. {en: 'af_heart', zh: 'zf_xiaoxiao'}) and the server's own default.
 * @param {object} [o]
 * @param {string} [o.baseUrl] e.g. 'http://host:8000/'; default: relative to the page
 * @param {Record<string, string|string[]>} [o.query] filters: language, gender, tag, type, all
 * @param {typeof fetch} [o.fetch]
 * @returns {Promise<{voices: Array<object>, defaults: Record<string, string>, default?: string}>}
 */
export async function voiceCatalog({ baseUrl, query, fetch: f = globalThis.fetch } = {}) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    for (const one of Array.isArray(v) ? v : [v]) if (one != null && one !== '') params.append(k, String(one));
  }
  const qs = params.toString();
  const res = await f(resolve(`v1/voices${qs ? `?${qs}` : ''}`, baseUrl));
  if (!res.ok) throw await readError(res);
  const body = await res.json();
  return {
    voices: Array.isArray(body.voices) ? body.voices : [],
    defaults: body.defaults && typeof body.defaults === 'object' ? body.defaults : {},
    default: typeof body.default === 'string' ? body.default : undefined,
  };
}

/**
 * Which language's default voice should read `text`: 'zh' when it has at least as many Han
 * characters as Latin-script words (as the server decides), else 'en'.
 * @param {string} text
 */
export function languageOf(text) {
  const han = (String(text).match(/[\u3400-\u9fff\uf900-\ufaff]/g) || []).length;
  const words = (String(text).match(/[A-Za-z\u00c0-\u024f]+/g) || []).length;
  return han > 0 && han >= words ? 'zh' : 'en';
}

/**
 * The voice to name for `text` when the user chose none: its language's default in `catalog`
 * (voiceCatalog's answer), else the server's default.
 * @param {string} text
 * @param {{defaults?: Record<string, string>, default?: string}} catalog
 * @returns {string|undefined}
 */
export function defaultVoiceFor(text, catalog) {
  const defaults = (catalog && catalog.defaults) || {};
  return defaults[languageOf(text)] || (catalog && catalog.default) || undefined;
}

/** The absolute URL of a voice's sample (GET /v1/voices/{id}/sample). */
export function sampleUrl(voiceId, baseUrl) {
  return resolve(`v1/voices/${encodeURIComponent(voiceId)}/sample`, baseUrl);
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
  return (await voiceCatalog({ baseUrl, fetch: f })).voices;
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
