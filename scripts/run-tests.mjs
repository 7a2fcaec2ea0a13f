#!/usr/bin/env node
// Runs every test file under test/ (except the chaos campaigns, which have their own
// command) with node's built-in runner and tsx, so the summary prints pass/fail counts.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const roots = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('-'));
const skip = new Set(['node_modules', 'chaos-campaign']);

function walk(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    if (skip.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const files = (roots.length ? roots : ['test']).flatMap((r) => (statSync(r).isDirectory() ? walk(r, []) : [r]));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...flags, ...files],
  { stdio: 'inherit' },
);
process.exit(r.status ?? 1);
