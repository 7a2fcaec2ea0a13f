// The refusal log's bound, on a logger that records its lines: the first refusal from an
// address in full, the rest summed up once per window, a bounded number of full lines per
// window however many addresses refuse, and nothing once they stop.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { MAX_ADDRESSES_PER_WINDOW, RefusalLog } from '../../src/transport/refusal-log.js';

function recorder(): { log: pino.Logger; lines: { msg: string; remote?: string; count?: number; kind?: string }[] } {
  const lines: { msg: string; remote?: string; count?: number; kind?: string }[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

const windowMs = 50;
const nextWindow = (): Promise<void> => new Promise((r) => setTimeout(r, windowMs * 1.5));

test('one full line per address, then one summary per window with the count', async () => {
  const { log, lines } = recorder();
  const r = new RefusalLog(log, 'refused a thing', 'refused things', { windowMs });
  for (let i = 0; i < 1_000; i++) r.refuse('10.0.0.1', { why: 'bad' });
  assert.deepEqual(lines.map((l) => l.msg), ['refused a thing']);
  await nextWindow();
  assert.equal(lines.length, 2);
  assert.match(lines[1]!.msg, /^1,000 refused things from 10\.0\.0\.1 in the last \d+ s$/);
  assert.equal(lines[1]!.count, 1_000);
  // An address that goes on is only summed up, window after window.
  for (let i = 0; i < 5; i++) r.refuse('10.0.0.1');
  await nextWindow();
  assert.equal(lines.length, 3);
  assert.equal(lines[2]!.count, 5);
  // Quiet for a window: forgotten, and the timer stops (nothing more is written).
  await nextWindow();
  await nextWindow();
  assert.equal(lines.length, 3);
  r.close();
});

test('kinds from one address are apart; many addresses cost a bounded number of lines', async () => {
  const { log, lines } = recorder();
  const r = new RefusalLog(log, 'refused a thing', 'refused things', { windowMs });
  r.refuse('10.0.0.1', {}, 'wrong secret');
  r.refuse('10.0.0.1', {}, 'wrong cluster id');
  assert.equal(lines.length, 2, 'each kind gets its first line');
  for (let i = 0; i < 5_000; i++) r.refuse(`10.1.${i >> 8}.${i & 255}`);
  assert.equal(lines.length, MAX_ADDRESSES_PER_WINDOW, 'full lines per window are bounded');
  await nextWindow();
  const summary = lines.at(-1)!;
  assert.match(summary.msg, /^4,992 refused things from 4,992 other addresses in the last/);
  assert.ok(lines.length <= 2 * MAX_ADDRESSES_PER_WINDOW + 1);
  r.close();
});
