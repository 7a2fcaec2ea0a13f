// npm run demo: the paused-holder story against the local cluster (start it with `npm start`).
//   npm run demo                                     # the resource is a fenced register behind HTTP
//   npm run demo -- --postgres postgresql://u@h/db   # the resource is a row in PostgreSQL,
//                                                    # written inside PostgresFence.write
// (`scripts/postgres.sh serve` starts a throwaway PostgreSQL and prints its URL.)
import { existsSync } from 'node:fs';
import { loadConfig } from '../../src/config/cluster-config.js';
import type { FencedResource } from './resource.js';
import { runStory } from './story.js';

const endpoints = process.env.PALISADE_ENDPOINTS?.split(',') ??
  (existsSync('cluster.config.json') ? loadConfig('cluster.config.json').nodes.map((n) => n.clientUrl) : []);
if (endpoints.length === 0) {
  console.error('no endpoints: run from the project folder with the cluster up (npm start), or set PALISADE_ENDPOINTS');
  process.exit(1);
}
const pgAt = process.argv.indexOf('--postgres');
let resource: FencedResource | undefined;
if (pgAt >= 0) {
  const connectionString = process.argv[pgAt + 1];
  if (!connectionString) {
    console.error('--postgres needs a connection string');
    process.exit(64);
  }
  const { postgresResource } = await import('./postgres-resource.js');
  resource = await postgresResource({ connectionString, table: 'palisade_demo_report' });
}
try {
  const out = await runStory(endpoints, { ttlMs: 2000, lock: 'demo/report', log: (l) => console.log(l), ...(resource ? { resource } : {}) });
  process.exitCode = out.aWrite.body.accepted ? 1 : 0;
} catch (e) {
  console.error(`demo failed: ${(e as Error).message}\nIs the cluster running? Start it with: npm start`);
  process.exitCode = 1;
} finally {
  await resource?.close();
}
process.exit(process.exitCode);
