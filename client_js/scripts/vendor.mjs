// Copy the opus-decoder wasm bundle (the decoder fallback) from node_modules into vendor/,
// where the server serves it next to the client. Run after `npm ci`: `npm run vendor`.
// `node scripts/vendor.mjs --check` exits 1 when vendor/ differs from node_modules/.

import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = join(root, 'node_modules', 'opus-decoder');
const files = ['opus-decoder.min.js', 'opus-decoder.min.js.map'];
const check = process.argv.includes('--check');

const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
mkdirSync(join(root, 'vendor'), { recursive: true });
let stale = false;
for (const name of files) {
  const src = readFileSync(join(pkgDir, 'dist', name));
  const dst = join(root, 'vendor', name);
  const same = existsSync(dst) && Buffer.compare(readFileSync(dst), src) === 0;
  if (check) {
    if (!same) {
      console.error(`vendor/${name} differs from opus-decoder@${version}: run npm run vendor`);
      stale = true;
    }
  } else if (!same) {
    writeFileSync(dst, src);
    console.log(`vendor/${name} <- opus-decoder@${version}`);
  }
}
if (!check) {
  writeFileSync(join(root, 'vendor', 'VERSION'), `opus-decoder ${version}\n`);
}
process.exit(stale ? 1 : 0);
