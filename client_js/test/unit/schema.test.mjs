// The browser client and the protocol's JSON Schema (server/emostream/transport/schema/
// protocol.schema.json): src/protocol-schema.js is what the schema makes, and neither client
// drops a start field the schema names (the old hand-written list dropped prompt and
// reference_audio).
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { EmoStreamClient, START_FIELDS } from '../../src/emostream-client.js';
import { EmoStreamContexts } from '../../src/contexts.js';
import { PROTOCOL_SCHEMA, schemaFields } from '../../src/protocol-schema.js';
import { render, SCHEMA_PATH, MODULE_PATH } from '../../scripts/schema.mjs';
import { FakeWebSocket, FakePlayer, fakeDecoderFactory } from '../helpers/fakes.mjs';

const schemaText = readFileSync(SCHEMA_PATH, 'utf8');
const schema = JSON.parse(schemaText);

/** The start fields, read from the JSON file itself (not from the generated module). */
function startFields() {
  const defs = schema.$defs;
  const names = new Set();
  const walk = (node) => {
    for (const part of node.allOf || []) if (part.$ref) walk(defs[part.$ref.split('/').pop()]);
    for (const key of Object.keys(node.properties || {})) names.add(key);
  };
  walk(defs.start);
  return [...names];
}

/** A value of the field's kind: its first enum value, its minimum, true, or a string. */
function sample(key) {
  const defs = schema.$defs;
  const find = (node) => {
    if (node.properties && node.properties[key]) return node.properties[key];
    for (const part of node.allOf || []) {
      const hit = part.$ref && find(defs[part.$ref.split('/').pop()]);
      if (hit) return hit;
    }
    return null;
  };
  const prop = find(defs.start);
  if (key === 'reference_audio') return 'UklGRg==';
  if (prop.enum) return prop.enum.find((v) => v !== null);
  const types = [].concat(prop.type || 'string');
  if (types.includes('number')) return prop.minimum;
  if (types.includes('boolean')) return !prop.default;
  return `${key}-value`;
}

beforeEach(() => {
  FakeWebSocket.instances = [];
});

test('src/protocol-schema.js is what the schema makes, and holds the schema itself', () => {
  assert.equal(readFileSync(MODULE_PATH, 'utf8'), render(schemaText), 'run npm run schema');
  assert.deepEqual(PROTOCOL_SCHEMA, schema);
  assert.deepEqual(schemaFields('start').sort(), startFields().sort());
});

test('START_FIELDS is every start field but type, format and context_id', () => {
  const want = startFields().filter((k) => !['type', 'format', 'context_id'].includes(k));
  assert.deepEqual([...START_FIELDS].sort(), want.sort());
  for (const key of ['prompt', 'reference_audio', 'cache', 'word_timestamps']) assert.ok(START_FIELDS.includes(key), key);
});

test('EmoStreamClient.start sends every start field the schema names', async () => {
  const client = new EmoStreamClient({
    url: 'ws://test/v1/stream', WebSocket: FakeWebSocket, player: new FakePlayer(), createDecoder: fakeDecoderFactory(), now: () => 0,
  });
  const opening = client.open();
  FakeWebSocket.last().serverOpen();
  await opening;
  const options = Object.fromEntries(startFields().filter((k) => !['type', 'context_id'].includes(k)).map((k) => [k, sample(k)]));
  options.format = { codec: 'pcm_s16le', sample_rate: 24000 };
  client.start(options);
  const [sent] = FakeWebSocket.last().messages;
  assert.deepEqual(sent, { type: 'start', ...options });
  for (const key of Object.keys(sent)) assert.ok(startFields().includes(key), `${key} is not in the schema`);
});

test('EmoStreamContexts.context sends every start field the schema names, with its context_id', async () => {
  const mux = new EmoStreamContexts({ url: 'ws://test/v1/stream', WebSocket: FakeWebSocket, createDecoder: fakeDecoderFactory() });
  const opening = mux.open();
  FakeWebSocket.last().serverOpen();
  await opening;
  const options = Object.fromEntries(startFields().filter((k) => !['type', 'context_id'].includes(k)).map((k) => [k, sample(k)]));
  options.format = { codec: 'opus', sample_rate: 48000 };
  mux.context({ ...options, contextId: 'turn-1' });
  const [sent] = FakeWebSocket.last().messages;
  assert.deepEqual(sent, { type: 'start', context_id: 'turn-1', ...options });
  assert.deepEqual(Object.keys(sent).filter((k) => !startFields().includes(k)), []);
});
