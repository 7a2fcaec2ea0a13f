// docs/cli.md's exit-code table and src/cli/exit-codes.ts list the same codes: every code an
// exported table of exit-codes.ts names (EXIT, KV_EXIT, and any added later) has a row, and
// every row's code is one of them, a signal's (128 + N) or 0. What each code means for each
// command is checked against real processes in test/ops/exit-codes.test.ts and the files
// that page names.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import * as exitCodes from '../../src/cli/exit-codes.js';
import { ROOT } from '../support/node-process.js';

/** Every code of every exported table of numbers in exit-codes.ts, with the names it has. */
function definedCodes(): Map<number, string[]> {
  const codes = new Map<number, string[]>();
  for (const [table, value] of Object.entries(exitCodes)) {
    if (typeof value !== 'object' || value === null) continue;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0 || !entries.every(([, v]) => typeof v === 'number')) continue;
    for (const [name, code] of entries as [string, number][]) codes.set(code, [...(codes.get(code) ?? []), `${table}.${name}`]);
  }
  return codes;
}

/** The codes in the first column of the table under "## Exit codes". */
function documentedCodes(): number[] {
  const page = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8');
  const section = page.slice(page.indexOf('## Exit codes'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('|')));
  return [...table.matchAll(/^\|\s*([^|]+?)\s*\|/gm)].flatMap((m) => [...m[1]!.matchAll(/\d+/g)].map((d) => Number(d[0])));
}

const SIGNALS = new Set([128 + 2, 128 + 15]); // SIGINT, SIGTERM

test('every exit code of src/cli/exit-codes.ts has a row in docs/cli.md', () => {
  const documented = new Set(documentedCodes());
  const missing = [...definedCodes()].filter(([code]) => !documented.has(code)).map(([code, names]) => `${code} (${names.join(', ')})`);
  assert.deepEqual(missing, []);
  assert.ok(definedCodes().size >= 7);
});

test('every code in the table is defined there, a signal\'s, or 0', () => {
  const defined = definedCodes();
  const unknown = documentedCodes().filter((c) => c !== 0 && !SIGNALS.has(c) && !defined.has(c));
  assert.deepEqual(unknown, []);
});
