// The module map of docs/internals.md, checked on the source: which folder of src/ may
// import which. Every relative import counts (static, dynamic, type-only, export-from), so a
// layer that reaches past its neighbours fails here before anyone has to read the graph.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const SRC = new URL('../../src/', import.meta.url).pathname;

/** Folders (or single files) of src/ each folder may import besides itself (packages are
 *  not checked here). The protocol shares the machine's vocabulary, declarations only. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  raft: [],
  lockfsm: [],
  fence: [],
  protocol: ['lockfsm/vocabulary.ts'],
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

/** What a file imports of src/ outside its own folder: paths relative to src/, as .ts. */
function importsOutside(file: string): Set<string> {
  const own = relative(SRC, file).split('/')[0]!;
  const out = new Set<string>();
  for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const target = relative(SRC, resolve(dirname(file), fileName)).replace(/\.js$/, '.ts');
    if (target.split('/')[0] !== own) out.add(target);
  }
  return out;
}

const permitted = (allowed: readonly string[], target: string): boolean =>
  allowed.some((a) => (a.endsWith('.ts') ? target === a : target.split('/')[0] === a));

for (const [folder, allowed] of Object.entries(MAY_IMPORT)) {
  test(`src/${folder} imports ${allowed.length ? `only ${allowed.join(', ')}` : 'nothing else of src'}`, () => {
    const files = sources(join(SRC, folder));
    assert.ok(files.length > 0, `src/${folder} has sources`);
    const wrong = files.flatMap((f) => [...importsOutside(f)].filter((t) => !permitted(allowed, t)).map((t) => `${relative(SRC, f)} -> src/${t}`));
    assert.deepEqual(wrong, []);
  });
}

test('src/protocol takes the lock machine\'s vocabulary as types only (nothing of the machine runs in a client)', () => {
  for (const file of sources(join(SRC, 'protocol'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^(import|export)\b([^;]*?)from\s+'(\.\.\/lockfsm\/[^']+)'/gms)) {
      assert.match(`${m[1]}${m[2]}`, /^(import|export) type\b/, `${relative(SRC, file)}: ${m[0]}`);
    }
  }
});
