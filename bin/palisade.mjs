#!/usr/bin/env node
// The `palisade` command. The TypeScript sources are compiled to dist/ by `npm install`
// (the package's prepare script) or `npm run build`.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  console.error('palisade: dist/ is missing; run `npm run build` (npm install does it) first');
  process.exit(1);
}
await import(main);
