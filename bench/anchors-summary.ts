// The anchors' JSONL results (bench/anchors.sh's $OUT) as one table: rate, acquire p50, server
// and client CPU µs per cycle, and ratios to etcd and ZooKeeper where they ran
// (bench/lib/anchor-summary.ts). Prints only; bench/anchors.sh runs it at the end.
//   node --import tsx bench/anchors-summary.ts .anchors/results-<time>.jsonl
import { readFileSync } from 'node:fs';
import { parseAnchorLines, renderAnchorSummary, summarise } from './lib/anchor-summary.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: node --import tsx bench/anchors-summary.ts RESULTS.jsonl');
  process.exit(2);
}
const { results, skipped } = parseAnchorLines(readFileSync(file, 'utf8'));
for (const s of skipped) console.error(`${file}: ${s} (left out)`);
if (results.length === 0) {
  console.log(`${file}: no results`);
} else {
  console.log(renderAnchorSummary(summarise(results)));
  console.log('CPU µs/cycle: CPU time over the window ÷ cycles (handoffs for contended); server = all of its server processes together.');
}
