import { test } from 'node:test';
import assert from 'node:assert/strict';

import { encodeWav, downmix } from '../../src/wav.js';
import { listVoices, voiceCatalog, languageOf, defaultVoiceFor, sampleUrl, cloneVoice, cloningUnavailable, HttpError } from '../../src/voices-api.js';

test('encodeWav writes a valid 16-bit mono PCM WAV', () => {
  const buf = encodeWav(Float32Array.from([0, 0.5, -1, 1, 2]), 24000);
  const v = new DataView(buf);
  const str = (o, n) => String.fromCharCode(...new Uint8Array(buf, o, n));
  assert.equal(str(0, 4), 'RIFF');
  assert.equal(v.getUint32(4, true), buf.byteLength - 8);
  assert.equal(str(8, 8), 'WAVEfmt ');
  assert.equal(v.getUint16(20, true), 1);
  assert.equal(v.getUint16(22, true), 1);
  assert.equal(v.getUint32(24, true), 24000);
  assert.equal(v.getUint32(28, true), 48000);
  assert.equal(v.getUint16(34, true), 16);
  assert.equal(str(36, 4), 'data');
  assert.equal(v.getUint32(40, true), 10);
  const samples = Array.from({ length: 5 }, (_, i) => v.getInt16(44 + 2 * i, true));
  assert.deepEqual(samples, [0, 16384, -32768, 32767, 32767]);
});

test('downmix averages channels', () => {
  const chans = [Float32Array.from([1, 0]), Float32Array.from([0, 1])];
  const audio = { numberOfChannels: 2, getChannelData: (c) => chans[c] };
  assert.deepEqual(Array.from(downmix(audio)), [0.5, 0.5]);
  const mono = { numberOfChannels: 1, getChannelData: () => chans[0] };
  const out = downmix(mono);
  assert.deepEqual(Array.from(out), [1, 0]);
  assert.notEqual(out, chans[0], 'a copy');
});

function fakeFetch(routes) {
  const calls = [];
  const f = async (url, init = {}) => {
    calls.push({ url, init });
    const key = `${init.method || 'GET'} ${new URL(url).pathname}`;
    const [status, body] = routes[key] || [404, { error: { code: 'not_found', message: 'Not Found' } }];
    return {
      ok: status >= 200 && status < 300,
      status,
      statusText: '',
      json: async () => {
        if (typeof body === 'string') throw new SyntaxError('not json');
        return body;
      },
    };
  };
  f.calls = calls;
  return f;
}

test('listVoices reads {voices: [...]}', async () => {
  const voices = [{ id: 'joe', model: 'piper', language: 'en', controls: ['speed'] }];
  const f = fakeFetch({ 'GET /v1/voices': [200, { voices }] });
  assert.deepEqual(await listVoices({ baseUrl: 'http://h:1/', fetch: f }), voices);
  assert.equal(f.calls[0].url, 'http://h:1/v1/voices');
});

test('listVoices surfaces HTTP errors with the server code', async () => {
  const f = fakeFetch({ 'GET /v1/voices': [500, { error: { code: 'internal', message: 'boom' } }] });
  await assert.rejects(listVoices({ baseUrl: 'http://h:1/', fetch: f }), (e) => e instanceof HttpError && e.status === 500 && e.code === 'internal' && e.message === 'boom');
});

test('cloneVoice posts multipart name + file and returns the voice', async () => {
  const f = fakeFetch({ 'POST /v1/voices': [201, { id: 'anna', model: 'emo', language: 'en' }] });
  const blob = new Blob([new Uint8Array(10)], { type: 'audio/wav' });
  const voice = await cloneVoice({ name: 'anna', file: blob, baseUrl: 'http://h:1/', fetch: f });
  assert.equal(voice.id, 'anna');
  const form = f.calls[0].init.body;
  assert.equal(f.calls[0].init.method, 'POST');
  assert.equal(form.get('name'), 'anna');
  assert.equal(form.get('file').name, 'reference.wav');
  assert.equal(form.get('file').size, 10);
});

test('cloneVoice accepts {voice: {...}} replies', async () => {
  const f = fakeFetch({ 'POST /v1/voices': [200, { voice: { id: 'v2' } }] });
  const v = await cloneVoice({ name: 'x', file: new Blob(['a']), baseUrl: 'http://h:1/', fetch: f });
  assert.equal(v.id, 'v2');
});

test('a server without cloning is recognised', async () => {
  for (const status of [404, 405, 501]) {
    const f = fakeFetch({ 'POST /v1/voices': [status, 'Method Not Allowed'] });
    const err = await cloneVoice({ name: 'x', file: new Blob(['a']), baseUrl: 'http://h:1/', fetch: f }).catch((e) => e);
    assert.equal(cloningUnavailable(err), true, `status ${status}`);
  }
  const f = fakeFetch({ 'POST /v1/voices': [422, { error: { code: 'too_short', message: 'clip under 3 s' } }] });
  const err = await cloneVoice({ name: 'x', file: new Blob(['a']), baseUrl: 'http://h:1/', fetch: f }).catch((e) => e);
  assert.equal(cloningUnavailable(err), false);
  assert.equal(err.code, 'too_short');
});

test('voiceCatalog reads the voices, the default of each language and the filters', async () => {
  const body = { voices: [{ id: 'af_heart' }, { id: 'zf_xiaoxiao' }], defaults: { en: 'af_heart', zh: 'zf_xiaoxiao' }, default: 'af_heart', hidden: 600 };
  const f = fakeFetch({ 'GET /v1/voices': [200, body] });
  const catalog = await voiceCatalog({ baseUrl: 'http://h:1/', fetch: f, query: { language: 'zh', tag: ['warm', 'bright'], all: null } });
  assert.deepEqual(catalog, { voices: body.voices, defaults: body.defaults, default: 'af_heart' });
  assert.equal(f.calls[0].url, 'http://h:1/v1/voices?language=zh&tag=warm&tag=bright');
  const old = fakeFetch({ 'GET /v1/voices': [200, { voices: [{ id: 'joe' }] }] }); // a server before the catalogue
  assert.deepEqual(await voiceCatalog({ baseUrl: 'http://h:1/', fetch: old }), { voices: [{ id: 'joe' }], defaults: {}, default: undefined });
});

test("the default voice follows the text's language, as the server decides it", () => {
  const catalog = { defaults: { en: 'af_heart', zh: 'zf_xiaoxiao' }, default: 'af_heart' };
  assert.equal(languageOf('Hello there!'), 'en');
  assert.equal(languageOf('你好，欢迎来到直播间。'), 'zh');
  assert.equal(languageOf('今天玩 Minecraft 吗？'), 'zh');
  assert.equal(languageOf('Thanks! 谢谢 everyone for coming to the stream'), 'en');
  assert.equal(defaultVoiceFor('你好', catalog), 'zf_xiaoxiao');
  assert.equal(defaultVoiceFor('Hi', catalog), 'af_heart');
  assert.equal(defaultVoiceFor('你好', { defaults: { en: 'joe' }, default: 'joe' }), 'joe');
  assert.equal(defaultVoiceFor('Hi', { defaults: {} }), undefined);
  assert.equal(sampleUrl('My Voice', 'http://h:1/'), 'http://h:1/v1/voices/My%20Voice/sample');
});
