// What fencing costs a PostgreSQL write: fenced writes/s (PostgresFence.write updating a
// row) against the same UPDATE in a plain transaction, for 1 and 16 concurrent writers,
// on a throwaway server this script starts. Prints a table and writes
// bench/results/fence-postgres.json.
//
//   node --import tsx bench/fence-postgres.ts [--seconds 3] [--mode durable|fast|both]
//
// durable: fsync and synchronous_commit on, as in production; every commit waits for the
// disk. fast: both off, which leaves the round trips and the locking, the part fencing adds.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { PostgresFence } from '../src/fence/postgres.js';
import { poolFor, startPostgres } from '../test/support/postgres.js';

type Mode = 'durable' | 'fast';
type Kind = 'fenced' | 'plain';
type Layout = 'one row' | 'row per writer';

interface Cell {
  mode: Mode;
  kind: Kind;
  writers: number;
  layout: Layout;
  writes: number;
  seconds: number;
  writesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  stale: number;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const SECONDS = Number(arg('seconds', '3'));
const WARMUP_MS = 300;
const modeArg = arg('mode', 'both');
const MODES: Mode[] = modeArg === 'both' ? ['durable', 'fast'] : [modeArg as Mode];
const SHAPES: Array<{ writers: number; layout: Layout }> = [
  { writers: 1, layout: 'one row' },
  { writers: 16, layout: 'one row' },
  { writers: 16, layout: 'row per writer' },
];

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function plainWrite(pool: pg.Pool, id: number, value: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('UPDATE bench_rows SET value = $2, n = n + 1 WHERE id = $1', [id, value]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

async function measure(
  pool: pg.Pool,
  fence: PostgresFence,
  mode: Mode,
  kind: Kind,
  writers: number,
  layout: Layout,
  token: bigint,
): Promise<Cell> {
  const latencies: number[] = [];
  let stale = 0;
  const start = performance.now();
  const measureFrom = start + WARMUP_MS;
  const end = measureFrom + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const id = layout === 'one row' ? 0 : w;
      let i = 0;
      for (;;) {
        const t0 = performance.now();
        if (t0 >= end) return;
        const value = `${w}:${i++}`;
        try {
          if (kind === 'plain') await plainWrite(pool, id, value);
          else {
            // One holder with one token, writing from every worker: equal tokens pass.
            await fence.write(`bench/${id}`, token, async (tx) => {
              await tx.query('UPDATE bench_rows SET value = $2, n = n + 1 WHERE id = $1', [id, value]);
            });
          }
        } catch (err) {
          if ((err as { code?: unknown }).code !== 'STALE_TOKEN') throw err;
          stale++;
        }
        const t1 = performance.now();
        if (t0 >= measureFrom && t1 <= end) latencies.push(t1 - t0);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    mode,
    kind,
    writers,
    layout,
    writes: latencies.length,
    seconds: SECONDS,
    writesPerSecond: Math.round(latencies.length / SECONDS),
    p50Ms: Number(percentile(latencies, 0.5).toFixed(2)),
    p99Ms: Number(percentile(latencies, 0.99).toFixed(2)),
    stale,
  };
}

async function runMode(mode: Mode): Promise<{ cells: Cell[]; serverVersion: string }> {
  const server = await startPostgres({ durable: mode === 'durable' });
  const pool = poolFor(server, { max: 20 });
  try {
    const fence = new PostgresFence(pool);
    await fence.migrate();
    await pool.query('CREATE TABLE bench_rows (id int PRIMARY KEY, value text NOT NULL, n bigint NOT NULL DEFAULT 0)');
    await pool.query(`INSERT INTO bench_rows (id, value) SELECT g, '' FROM generate_series(0, 15) AS g`);
    const version = await pool.query<{ server_version: string }>('SHOW server_version');
    const cells: Cell[] = [];
    let token = 1n;
    for (const { writers, layout } of SHAPES) {
      for (const kind of ['plain', 'fenced'] as const) {
        cells.push(await measure(pool, fence, mode, kind, writers, layout, token++));
      }
    }
    return { cells, serverVersion: version.rows[0]!.server_version };
  } finally {
    await pool.end();
    await server.destroy();
  }
}

function printTable(cells: Cell[]): void {
  const header = ['mode', 'writers', 'layout', 'plain w/s', 'fenced w/s', 'fenced/plain', 'plain p50/p99 ms', 'fenced p50/p99 ms'];
  const rows: string[][] = [];
  for (const mode of MODES) {
    for (const { writers, layout } of SHAPES) {
      const plain = cells.find((c) => c.mode === mode && c.kind === 'plain' && c.writers === writers && c.layout === layout)!;
      const fenced = cells.find((c) => c.mode === mode && c.kind === 'fenced' && c.writers === writers && c.layout === layout)!;
      rows.push([
        mode,
        String(writers),
        layout,
        String(plain.writesPerSecond),
        String(fenced.writesPerSecond),
        `${((100 * fenced.writesPerSecond) / plain.writesPerSecond).toFixed(0)}%`,
        `${plain.p50Ms} / ${plain.p99Ms}`,
        `${fenced.p50Ms} / ${fenced.p99Ms}`,
      ]);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cols: string[]): string => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

const cells: Cell[] = [];
let serverVersion = '';
for (const mode of MODES) {
  const r = await runMode(mode);
  cells.push(...r.cells);
  serverVersion = r.serverVersion;
}
printTable(cells);

const stale = cells.reduce((n, c) => n + c.stale, 0);
if (stale > 0) console.log(`\nunexpected: ${stale} fenced writes were refused as stale`);

const outDir = new URL('./results/', import.meta.url);
mkdirSync(outDir, { recursive: true });
const outFile = new URL('fence-postgres.json', outDir);
writeFileSync(
  outFile,
  JSON.stringify(
    {
      benchmark: 'fence-postgres',
      date: new Date().toISOString(),
      node: process.version,
      postgres: serverVersion,
      cpus: cpus().length,
      secondsPerCell: SECONDS,
      cells,
    },
    null,
    2,
  ) + '\n',
);
console.log(`\nwrote ${outFile.pathname}`);
