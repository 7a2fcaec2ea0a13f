// What an ABBA comparison (`npm run bench -- --abba`) prints and writes: per figure each
// build's median, B/A and its spread, under a header that says which commits A and B are and
// how the two columns of ratios were computed.
import { pairsSay, type Comparison, type Side } from './lib/abba.js';
import { figure } from './lib/format.js';
import { renderTable } from './lib/table.js';
import type { CaseOutcome } from './lib/case-outcome.js';

export const RATIO = 'median of B / median of A';
export const SPREAD = 'lowest-highest B/A over the pairs of neighbouring runs (runs 1-2, 3-4, ...: each an A and a B measured one after the other)';

export interface AbbaReport {
  readonly ref: string;
  /** Abbreviated commit hashes; B is the working tree, `+ N modified in src/` when it differs from its commit. */
  readonly commits: { readonly A: string; readonly B: string };
  readonly order: string;
  readonly ratio: typeof RATIO;
  readonly spread: typeof SPREAD;
  readonly figures: readonly Comparison[];
  /** Every run's outcomes, in the order they ran. */
  readonly runs: readonly { readonly side: Side; readonly cases: readonly CaseOutcome[] }[];
}

const times = (q: number | null): string => (q === null ? '' : `×${q.toFixed(3)}`);

export function renderAbba(r: AbbaReport): string {
  const pairs = r.runs.length / 2;
  const header = [
    `ABBA: A = ${r.commits.A} (${r.ref}), B = ${r.commits.B} (this working tree); order ${r.order}`,
    `B/A is the ${RATIO}; its spread is the ${SPREAD.replace('over the pairs', `over the ${pairs} pairs`)}.`,
    // Two builds that do not differ still put every pair on the same side of ×1 now and then:
    // each pair is a coin toss then, so all n agree with probability 2 × 2^-n.
    `Read a ratio as a change only where the spread stays on one side of ×1 ("pairs" column); with ${pairs} pair${pairs === 1 ? '' : 's'}, ` +
      `two identical builds still get that ${(100 * 2 ** (1 - pairs)).toFixed(0)} % of the time (more rounds: --rounds). Nothing here is asserted.`,
  ];
  const count = (vs: readonly (number | null)[]): number => vs.filter((v) => v !== null).length;
  const table = renderTable(
    ['figure', 'better', 'A median', 'B median', 'B/A', 'spread of B/A', 'pairs', 'runs A/B'],
    r.figures.map((c) => [
      c.key,
      c.better,
      figure(c.a.median),
      figure(c.b.median),
      times(c.ratio),
      c.spread ? `${times(c.spread.min)} – ${times(c.spread.max)}` : '',
      pairsSay(c),
      `${count(c.a.values)}/${count(c.b.values)}`,
    ]),
  );
  return [...header, '', table].join('\n');
}
