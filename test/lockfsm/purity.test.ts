// The machine must behave identically on every node: no clock, no randomness, no I/O, no
// timers, and no imports beyond its own folder and msgpackr. Checked on the source text.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('../../src/lockfsm/', import.meta.url).pathname;
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

/** Source without comments, so prose may mention what the code must not use. */
function code(file: string): string {
  return readFileSync(join(dir, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

const FORBIDDEN: [RegExp, string][] = [
  [/\bDate\b/, 'Date (a clock)'],
  [/\bperformance\b/, 'performance (a clock)'],
  [/\bhrtime\b/, 'hrtime (a clock)'],
  [/Math\.random/, 'Math.random'],
  [/\bcrypto\b/, 'crypto (randomness)'],
  [/\bset(Timeout|Interval|Immediate)\b/, 'timers'],
  [/\bqueueMicrotask\b/, 'microtasks'],
  [/\bprocess\./, 'process'],
  [/\brequire\(/, 'require'],
  [/\bimport\(/, 'dynamic import'],
  [/\bawait\b|\basync\b|\bPromise\b/, 'asynchrony'],
  [/localeCompare|Intl\./, 'locale-dependent ordering'],
];

describe('purity of src/lockfsm', () => {
  it('has source files', () => assert.ok(files.length >= 10));

  for (const file of files) {
    it(`${file} uses no clock, randomness, timers or I/O`, () => {
      const src = code(file);
      for (const [re, what] of FORBIDDEN) assert.doesNotMatch(src, re, `${file} uses ${what}`);
    });

    it(`${file} imports only its own folder and msgpackr`, () => {
      const src = code(file);
      for (const m of src.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g)) {
        const spec = m[1]!;
        assert.ok(spec === 'msgpackr' || /^\.\/[\w.-]+\.js$/.test(spec), `${file} imports ${spec}`);
      }
    });
  }
});
