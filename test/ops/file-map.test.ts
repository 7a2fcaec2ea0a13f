// docs/internals.md names every source file (its "File map", written by scripts/file-map.mjs):
// a newcomer finds where a change goes from that page alone, so it must not fall behind. The
// same page lists which suites start real `palisade` processes, and why: a suite
// that starts them without being listed, or a listed path that is gone, fails here.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/node-process.js';
// @ts-expect-error: a plain script without declarations
import { fileMap } from '../../scripts/file-map.mjs';

const page = readFileSync(join(ROOT, 'docs/internals.md'), 'utf8');

test('the file map in docs/internals.md is the tree as it is (npm run docs:files)', () => {
  assert.ok(page.includes((fileMap as () => string)()), 'docs/internals.md is out of date: run npm run docs:files');
});

/** Test files under `dir` (relative to the root), as scripts/run-tests.mjs walks them. */
function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir))
    .sort()
    .flatMap((name) => {
      const rel = `${dir}/${name}`;
      if (name === 'node_modules' || name === 'chaos-campaign') return [];
      if (statSync(join(ROOT, rel)).isDirectory()) return testFiles(rel);
      return name.endsWith('.test.ts') ? [rel] : [];
    });
}

/** Whether a suite starts `palisade` processes: it uses the process cluster, starts a node or
 *  runs the built CLI (test/support/cluster.ts, node-process.ts, cli-process.ts). */
function startsProcesses(text: string): boolean {
  const support = [...text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*'(?:\.\.\/support|\.)\/(?:cluster|node-process)\.js'/g)];
  return support.some((m) => /\b(TestCluster|startNode|CLI)\b/.test(m[1]!)) || /from\s*'(?:\.\.\/support|\.)\/cli-process\.js'/.test(text);
}

test('docs/internals.md names every suite that starts processes, and only paths that exist', () => {
  const heading = '### Which suites run in process, and which start processes';
  const start = page.indexOf(heading);
  assert.ok(start >= 0, `docs/internals.md has no "${heading}"`);
  const section = page.slice(start, page.indexOf('\n### ', start + heading.length));
  const split = section.indexOf('Real processes, and why:');
  assert.ok(split >= 0, 'the section has no "Real processes, and why:" list');
  const paths = (text: string) => [...text.matchAll(/`(test\/[^`\s]+)`/g)].map((m) => m[1]!);
  const inProcess = paths(section.slice(0, split));
  const processes = paths(section.slice(split));

  assert.deepEqual([...inProcess, ...processes].filter((p) => !existsSync(join(ROOT, p))), [], 'paths named that do not exist');
  const suites = testFiles('test').filter((f) => {
    const text = readFileSync(join(ROOT, f), 'utf8');
    return !/^\/\/.*@system\b/m.test(text.slice(0, 4096)) && startsProcesses(text);
  });
  const named = (f: string, list: string[]) => list.some((p) => p === f || (p.endsWith('/') && f.startsWith(p)));
  assert.deepEqual(suites.filter((f) => !named(f, processes)), [], 'suites that start processes, not in the list of why');
  // A folder listed as in process holds none, unless the process list names the file itself.
  assert.deepEqual(suites.filter((f) => named(f, inProcess) && !processes.includes(f)), [], 'process suites in a folder listed as in process');
});
