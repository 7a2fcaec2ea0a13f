#!/usr/bin/env node
// The `palisade` command. The release tarball (`npm pack`) holds dist/, built; in a checkout
// `npm install` (the prepare script), `npm start` or `npm run build` compile it from src/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  console.error('palisade: dist/ is missing; in a checkout of the repository run `npm run build` (npm install and npm start do it) first');
  process.exit(1);
}
await import(main);
