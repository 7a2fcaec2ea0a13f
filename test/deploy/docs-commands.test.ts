// Commands in the docs name real ports and real tables. A runbook once sent `--join` to the
// status pages' ports (7302) and queried a table that does not exist (palisade_fences): every
// URL the docs give to --join, --endpoints or PALISADE_ENDPOINTS must be a client URL (ws://
// or wss:// on a port that is a clientUrl's in a config the repository ships), and every
// table a docs query names must be the fence's table.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_FENCE_TABLE } from '../../src/fence/postgres-sql.js';
import { ROOT } from '../support/node-process.js';

const pages = [...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'README.md'];
const text = (page: string): string => readFileSync(join(ROOT, page), 'utf8');

interface ShippedNode { readonly peerUrl: string; readonly clientUrl: string; readonly httpUrl?: string }
const shipped = ['cluster.config.json', ...readdirSync(join(ROOT, 'deploy')).filter((f) => f.endsWith('.json')).map((f) => `deploy/${f}`)]
  .flatMap((f) => (JSON.parse(readFileSync(join(ROOT, f), 'utf8')) as { nodes: ShippedNode[] }).nodes);
const port = (url: string): number => Number(new URL(url).port);
const clientPorts = new Set(shipped.map((n) => port(n.clientUrl)));
const otherPorts = new Set(shipped.flatMap((n) => [port(n.peerUrl), ...(n.httpUrl ? [port(n.httpUrl)] : [])]));

test('the shipped configs keep client ports apart from peer and status page ports', () => {
  assert.ok(clientPorts.size > 0);
  assert.deepEqual([...clientPorts].filter((p) => otherPorts.has(p)), []);
});

test('every URL the docs give to --join, --endpoints or PALISADE_ENDPOINTS is a client URL', () => {
  let checked = 0;
  for (const page of pages) {
    for (const m of text(page).matchAll(/(--join|--endpoints?|PALISADE_ENDPOINTS=)[ =]?((?:wss?|https?):\/\/[^\s`)'"]+)/g)) {
      for (const url of m[2]!.split(',')) {
        if (url.includes('…')) continue; // an outline, not an address
        const where = `${page}: ${m[1]} ${url}`;
        assert.match(url, /^wss?:\/\//, `${where}: the client port speaks WebSocket`);
        assert.ok(clientPorts.has(port(url)), `${where}: port ${port(url)} is no clientUrl's (client ports: ${[...clientPorts].join(', ')})`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 10, `${checked} URLs checked`);
});

test('every table a query in the docs names is the fence table', () => {
  let checked = 0;
  for (const page of pages) {
    for (const m of text(page).matchAll(/\b(?:FROM|INTO|UPDATE|TABLE(?: IF NOT EXISTS)?)\s+"?(palisade\w*)/g)) {
      assert.equal(m[1], DEFAULT_FENCE_TABLE, `${page}: ${m[0]}`);
      checked++;
    }
  }
  assert.ok(checked >= 1, `${checked} queries checked`);
});
