#!/usr/bin/env node
// Builds the client-only package (packages/client: the SDK and the in-memory fence, with
// `ws` and `msgpackr` as its only dependencies) and packs it:
//   node scripts/pack-client.mjs [DEST]      -> prints the path of the .tgz written to DEST
//   node scripts/pack-client.mjs --build-only -> builds packages/client/dist, packs nothing
//                                               (its prepublishOnly: a publish never ships a stale dist)
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const pkg = join(root, 'packages/client');
const buildOnly = process.argv[2] === '--build-only';
const dest = resolve(buildOnly ? '.' : (process.argv[2] ?? join(root, 'packages')));
rmSync(join(pkg, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.client.json')], { stdio: 'inherit' });
if (buildOnly) process.exit(0);
mkdirSync(dest, { recursive: true });
const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: pkg, encoding: 'utf8' }).trim().split('\n').pop();
console.log(join(dest, out));
