#!/usr/bin/env node
// Runs the test files under test/ (except the chaos campaigns, which have their own command)
// with node's built-in runner and tsx, so the summary prints pass/fail counts; the files
// marked `@solo` run afterwards, one at a time.
//
// Files marked `@system` are the system suites: the release tarball and the client package
// installed into empty projects, the deployment guide run in network namespaces, the Go and
// Python clients built and installed, the conformance table over three languages, headless
// Chromium against the status page, a real Prometheus firing the alert rules. They need minutes and the machine's tools rather than
// the server's logic; `npm test` leaves them to `npm test -- --system` (npm run
// test:system), which CI runs as a stage of its own. `--all` runs both.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const roots = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const ownFlags = new Set(['--system', '--all']);
const flags = process.argv.slice(2).filter((a) => a.startsWith('-') && !ownFlags.has(a));
const want = process.argv.includes('--all') ? 'all' : process.argv.includes('--system') ? 'system' : 'core';
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
// A file whose header says `@solo` runs after the others, alone: it attacks a cluster with a
// flood process of its own and asserts that the leader keeps its term, which on two cores is
// a statement about the node only if no other test's cluster competes for the CPU (the
// attacker already takes one core; a leader stalled 250 ms plus one 50 ms heartbeat interval
// has lost its followers' 300 ms election timeout).
const isSolo = (f) => /^\/\/.*@solo\b/m.test(readFileSync(f, 'utf8').slice(0, 4096));
const isSystem = (f) => /^\/\/.*@system\b/m.test(readFileSync(f, 'utf8').slice(0, 4096));
// Files named on the command line run whatever their mark.
const chosen = roots.some((r) => r.endsWith('.test.ts')) || want === 'all' ? files : files.filter((f) => isSystem(f) === (want === 'system'));
const solo = chosen.filter(isSolo);
const shared = chosen.filter((f) => !solo.includes(f));

// With a file per process, node's --test-timeout bounds each FILE (measured on Node 20: the
// file is killed and reported "test timed out"): a test that hangs then fails by its file's
// name instead of holding the whole run until CI's own limit kills it silently. All the files
// together take about four minutes on two cores; ten minutes for one is a hang, not a slow machine.
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 600_000);

function run(list, concurrency) {
  if (list.length === 0) return 0;
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, `--test-timeout=${FILE_TIMEOUT_MS}`, '--test-reporter=spec', ...flags, ...list],
    { stdio: 'inherit' },
  );
  return r.status ?? 1;
}

const statuses = [run(shared, process.env.TEST_CONCURRENCY ?? '2'), run(solo, '1')];
if (solo.length > 0 && shared.length > 0) console.log(`(two runs: ${shared.length} files, then ${solo.length} alone: ${solo.join(', ')})`);
process.exit(statuses.find((s) => s !== 0) ?? 0);
