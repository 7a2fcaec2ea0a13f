// src/config has no import cycle: cluster-config.ts reads the defaults, so defaults.ts must not
// import cluster-config.ts (it did, for types; they live in types.ts now).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const DIR = new URL('../../src/config/', import.meta.url).pathname;

test('src/config has no import cycle', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.ts')).map((f) => join(DIR, f));
  const imports = new Map(files.map((f) => [f, ts.preProcessFile(readFileSync(f, 'utf8'), true, true).importedFiles.map((i) => i.fileName).filter((n) => n.startsWith('.')).map((n) => resolve(dirname(f), n).replace(/\.js$/, '.ts')).filter((t) => files.includes(t))]));
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    path.push(f);
    for (const t of imports.get(f)!) {
      if (state.get(t) === 'open') cycles.push([...path.slice(path.indexOf(t)), t].map((x) => relative(DIR, x)).join(' -> '));
      else if (!state.has(t)) visit(t);
    }
    path.pop();
    state.set(f, 'done');
  };
  for (const f of files) if (!state.has(f)) visit(f);
  assert.deepEqual(cycles, []);
  assert.ok(imports.get(join(DIR, 'cluster-config.ts'))!.includes(join(DIR, 'defaults.ts')), 'the check sees imports');
});
