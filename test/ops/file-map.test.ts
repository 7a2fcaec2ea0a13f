// docs/internals.md names every source file (its "File map", written by scripts/file-map.mjs):
// a newcomer finds where a change goes from that page alone, so it must not fall behind.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/node-process.js';
// @ts-expect-error: a plain script without declarations
import { fileMap } from '../../scripts/file-map.mjs';

test('the file map in docs/internals.md is the tree as it is (npm run docs:files)', () => {
  const page = readFileSync(join(ROOT, 'docs/internals.md'), 'utf8');
  assert.ok(page.includes((fileMap as () => string)()), 'docs/internals.md is out of date: run npm run docs:files');
});
