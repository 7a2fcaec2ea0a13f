#!/usr/bin/env node
// Builds dist/ from src/ when it is missing or older than the sources, so that a fresh clone's
// `npm install && npm start` runs, and the release tarball (`npm pack`, prepack) carries a
// current build. Installing the tarball never builds: it holds dist/, and the compiler is a
// dev dependency that `npm install --omit=dev` does not install.
//
//   node scripts/ensure-built.mjs               build if stale; fail if the compiler is missing
//   node scripts/ensure-built.mjs --if-compiler  the same, but only a note when it is missing
//                                               (npm's prepare: a checkout installed without
//                                               dev dependencies must still install)
//   node scripts/ensure-built.mjs --release     build if stale, then refuse compiled files
//                                               whose source is gone (they would ship)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
const CONFIGS = ['tsconfig.base.json', 'tsconfig.build.json'].map((f) => join(ROOT, f));
const mode = process.argv[2] ?? '';

function files(dir, suffix) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? files(p, suffix) : e.name.endsWith(suffix) ? [p] : [];
  });
}

const newest = (paths) => Math.max(0, ...paths.map((p) => statSync(p).mtimeMs));

/** Why dist/ must be rebuilt, or null when it is current. */
function staleness() {
  const built = files(DIST, '.js');
  if (!existsSync(join(DIST, 'cli/main.js')) || built.length === 0) return 'dist/ is missing';
  const sources = [...files(SRC, '.ts'), ...CONFIGS];
  return newest(sources) > newest(built) ? 'src/ changed since dist/ was built' : null;
}

function compiler() {
  try {
    return createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return null;
  }
}

const why = staleness();
if (why !== null) {
  const tsc = compiler();
  if (tsc === null) {
    const message = `palisade: ${why}, and TypeScript is not installed to build it: run \`npm install\` with dev dependencies, or install the release tarball, which holds dist/ (docs/deployment.md)`;
    if (mode === '--if-compiler') {
      console.error(`${message} (skipped)`);
      process.exit(0);
    }
    console.error(message);
    process.exit(1);
  }
  console.error(`palisade: ${why}; building (tsc -p tsconfig.build.json)`);
  const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit', cwd: ROOT });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (mode === '--release') {
  const orphans = files(DIST, '.js').filter((js) => !existsSync(join(SRC, relative(DIST, js)).replace(/\.js$/, '.ts')));
  if (orphans.length > 0) {
    console.error(`palisade: dist/ holds files whose source is gone (${orphans.map((f) => relative(ROOT, f)).join(', ')}): delete dist/ and pack again`);
    process.exit(1);
  }
}
