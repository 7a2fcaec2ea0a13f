// The payment story against the local cluster (start it with `npm start`):
//   node --import tsx examples/payment/demo.ts
import { existsSync } from 'node:fs';
import { loadConfig } from '../../src/config/cluster-config.js';
import { runPaymentStory } from './story.js';

const endpoints = process.env.PALISADE_ENDPOINTS?.split(',') ??
  (existsSync('cluster.config.json') ? loadConfig('cluster.config.json').nodes.map((n) => n.clientUrl) : []);
if (endpoints.length === 0) {
  console.error('no endpoints: run from the project folder with the cluster up (npm start), or set PALISADE_ENDPOINTS');
  process.exit(1);
}
try {
  const out = await runPaymentStory(endpoints, { ttlMs: 2000, lock: 'demo/order-42', opKey: `charge-42/${Date.now()}`, log: (l) => console.log(l) });
  process.exit(out.charges.charges.length === 1 && out.aEnd.event === 'error' ? 0 : 1);
} catch (e) {
  console.error(`demo failed: ${(e as Error).message}\nIs the cluster running? Start it with: npm start`);
  process.exit(1);
}
