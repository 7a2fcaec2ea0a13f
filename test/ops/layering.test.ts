// The module map of docs/internals.md, checked on the source: which folder of src/ may
// import which. Every relative import counts (static, dynamic, type-only, export-from), so a
// layer that reaches past its neighbours fails here before anyone has to read the graph.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const SRC = new URL('../../src/', import.meta.url).pathname;

/** Folders of src/ each folder may import besides itself (packages are not checked here). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  raft: [],
  lockfsm: [],
  fence: [],
  protocol: [],
  client: ['protocol', 'fence'],
  transport: ['protocol', 'raft'],
  storage: ['raft'],
  config: ['lockfsm'],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The src/ folders a file imports, other than its own. */
function importedFolders(file: string): Set<string> {
  const own = relative(SRC, file).split('/')[0]!;
  const out = new Set<string>();
  for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const folder = relative(SRC, resolve(dirname(file), fileName)).split('/')[0]!;
    if (folder !== own) out.add(folder);
  }
  return out;
}

for (const [folder, allowed] of Object.entries(MAY_IMPORT)) {
  test(`src/${folder} imports ${allowed.length ? `only ${allowed.join(', ')}` : 'nothing else of src'}`, () => {
    const files = sources(join(SRC, folder));
    assert.ok(files.length > 0, `src/${folder} has sources`);
    const wrong = files.flatMap((f) => [...importedFolders(f)].filter((d) => !allowed.includes(d)).map((d) => `${relative(SRC, f)} -> src/${d}`));
    assert.deepEqual(wrong, []);
  });
}
