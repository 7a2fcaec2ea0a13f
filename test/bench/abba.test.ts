// `npm run bench -- --abba`: its options, and the arithmetic of the comparison (the order of
// the runs, each side's median, B/A and its spread over neighbouring pairs), on made-up
// samples: what is tested is the arithmetic, not a measurement.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { abbaSchedule, compare, pairsSay, type Figure, type Run, type Side } from '../../bench/lib/abba.js';
import { parseOptions, type BenchOptions } from '../../bench/lib/options.js';

function options(argv: string[]): BenchOptions {
  const o = parseOptions(argv);
  assert.notEqual(o, 'help');
  return o as BenchOptions;
}

test('--abba takes a REF only when one follows it, HEAD~1 otherwise; --rounds defaults to 2', () => {
  assert.equal(options([]).abba, null);
  assert.deepEqual(options(['--abba']).abba, { ref: 'HEAD~1', rounds: 2 });
  assert.deepEqual(options(['--abba', '--quick']).abba, { ref: 'HEAD~1', rounds: 2 });
  assert.deepEqual(options(['--abba', 'v0.1.0', '--rounds', '3']).abba, { ref: 'v0.1.0', rounds: 3 });
  assert.deepEqual(options(['--abba=abc123']).abba, { ref: 'abc123', rounds: 2 });
  const o = options(['--abba', 'HEAD~1', '--quick', '--only', 'uncontended', '--rounds', '1']);
  assert.deepEqual(o.abba, { ref: 'HEAD~1', rounds: 1 });
  // The other options are read as in a plain run.
  assert.equal(o.quick, true);
  assert.deepEqual(o.only, ['uncontended']);
  assert.equal(o.durationMs, 1_000);
});

test('--abba and --rounds refuse what they cannot mean', () => {
  assert.throws(() => parseOptions(['--rounds', '2']), /only with --abba/);
  assert.throws(() => parseOptions(['--abba', '--rounds', '0']), /--rounds/);
  assert.throws(() => parseOptions(['--abba', '--rounds', '1.5']), /whole number/);
  assert.throws(() => parseOptions(['--abba', 'a', '--abba', 'b']), /twice/);
  assert.throws(() => parseOptions(['--abba=']), /expected a commit/);
});

test('the schedule is A B B A per round', () => {
  assert.deepEqual(abbaSchedule(1), ['A', 'B', 'B', 'A']);
  assert.equal(abbaSchedule(2).join(''), 'ABBAABBA');
  assert.throws(() => abbaSchedule(0));
});

const run = (side: Side, values: Record<string, number | null>, better: Figure['better'] = 'higher'): Run => ({
  side,
  figures: Object.entries(values).map(([key, value]) => ({ key, value, better })),
});

test('medians per side, B/A of the medians, and the spread of the neighbouring pairs', () => {
  // A B B A A B B A; pairs (A100,B110) (B120,A100) (A80,B90) (B99,A90).
  const runs = [100, 110, 120, 100, 80, 90, 99, 90].map((v, i) => run(abbaSchedule(2)[i]!, { 'u C=1: cycles/s': v }));
  const [c] = compare(runs);
  assert.ok(c);
  assert.deepEqual(c.a.values, [100, 100, 80, 90]);
  assert.deepEqual(c.b.values, [110, 120, 90, 99]);
  assert.equal(c.a.median, 95);
  assert.equal(c.b.median, 104.5);
  assert.equal(c.ratio, 104.5 / 95);
  assert.deepEqual(c.pairRatios, [1.1, 1.2, 90 / 80, 1.1]);
  assert.deepEqual(c.spread, { min: 1.1, max: 1.2 });
  assert.equal(pairsSay(c), 'B better in all 4 pairs');
});

test('"better" follows the figure: a lower latency in B is better, a higher one worse', () => {
  const lower = (vs: number[]): Run[] => vs.map((v, i) => run(abbaSchedule(1)[i]!, { p50: v }, 'lower'));
  assert.equal(pairsSay(compare(lower([2, 1.5, 1.8, 2.2]))[0]!), 'B better in all 2 pairs');
  assert.equal(pairsSay(compare(lower([2, 2.5, 1.8, 1.5]))[0]!), 'B worse in all 2 pairs');
  assert.equal(pairsSay(compare(lower([2, 2.5, 1.8, 2.2]))[0]!), 'mixed: B better in 1 of 2');
});

test('a run without a figure leaves it out of its side and its pair, not out of the others', () => {
  const runs = [run('A', { x: 10, y: 4 }), run('B', { x: 12 }), run('B', { x: null, y: 6 }), { side: 'A' as const, figures: [] }];
  const [x, y] = compare(runs);
  assert.equal(x!.key, 'x');
  assert.deepEqual(x!.a.values, [10, null]);
  assert.deepEqual(x!.b.values, [12, null]);
  assert.equal(x!.ratio, 1.2);
  assert.deepEqual(x!.pairRatios, [1.2]);
  assert.equal(pairsSay(x!), 'B better in its pair');
  // y: no pair has both sides, but each side has a median.
  assert.equal(y!.ratio, 1.5);
  assert.deepEqual(y!.pairRatios, []);
  assert.equal(y!.spread, null);
  assert.equal(pairsSay(y!), 'no pairs');
  // Nothing to divide by: no ratio rather than Infinity.
  assert.equal(compare([run('A', { z: 0 }), run('B', { z: 3 })])[0]!.ratio, null);
});

test('runs that are not in A,B pairs are refused', () => {
  assert.throws(() => compare([run('A', {}), run('A', {})]), /both A/);
  assert.throws(() => compare([run('A', {})]), /pairs/);
});
