// npm run demo: the paused-holder story against the local cluster (start it with `npm start`).
import { existsSync } from 'node:fs';
import { loadConfig } from '../../src/server/config.js';
import { runStory } from './story.js';

const endpoints = process.env.PALISADE_ENDPOINTS?.split(',') ??
  (existsSync('cluster.config.json') ? loadConfig('cluster.config.json').nodes.map((n) => n.clientUrl) : []);
if (endpoints.length === 0) {
  console.error('no endpoints: run from the project folder with the cluster up (npm start), or set PALISADE_ENDPOINTS');
  process.exit(1);
}
try {
  const out = await runStory(endpoints, { ttlMs: 2000, lock: 'demo/report', log: (l) => console.log(l) });
  process.exit(out.aWrite.body.accepted ? 1 : 0);
} catch (e) {
  console.error(`demo failed: ${(e as Error).message}\nIs the cluster running? Start it with: npm start`);
  process.exit(1);
}
