// A bench cluster that stays up until stopped (closing stdin; Ctrl-C and SIGTERM work too): the same
// fresh 3-node cluster `npm run bench` measures, for running other clients against it (the
// anchors, bench/anchors.sh). Prints one JSON line: {"endpoints": [...], "pids": [...], "dir"}.
//
//   node --import tsx bench/cluster-up.ts [--info FILE] [--no-build]
import { writeFileSync } from 'node:fs';
import { ensureBuilt } from './build-check.js';
import { BenchCluster, CLI, ROOT } from './cluster.js';

const infoAt = process.argv.indexOf('--info');
const infoFile = infoAt >= 0 ? process.argv[infoAt + 1] : undefined;
if (!process.argv.includes('--no-build')) ensureBuilt(ROOT, CLI, (line) => console.error(line));
const cluster = await BenchCluster.launch(ROOT);
const info = JSON.stringify({ endpoints: cluster.endpoints, pids: cluster.nodes().map((n) => n.pid), dir: cluster.dir });
if (infoFile) writeFileSync(infoFile, info + '\n');
console.log(info);
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void cluster.stop().then(() => process.exit(0));
};
process.stdin.on('end', stop);
process.stdin.resume();
