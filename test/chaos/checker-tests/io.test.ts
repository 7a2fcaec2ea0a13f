// JSONL reading and writing, and the report.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, formatReport, HistoryFormatError, parseHistoryJsonl, readHistoryJsonl, writeHistoryJsonl } from '../checker/index.js';
import { HistoryBuilder } from './builder.js';

function sample(): HistoryBuilder {
  const h = new HistoryBuilder();
  h.acquire('s1', 'L', 5, [0, 1]);
  h.acquire('s2', 'L', null, [0.5, null]);
  h.fencedWrite('s1', 'L', 5, [1.5, 2]);
  h.release('s1', 'L', 5, [2, 3]);
  h.tryAcquire('s3', 'L', 7, [4, 5], { mode: 'shared', limit: 3 });
  h.read('L', [['s3', 7]], [6, 7]);
  h.expire('s2', [1, null], { outcome: 'unknown' });
  h.campaign('s1', 'E', { node: 1 }, 9, [8, 9]);
  h.leader('E', { session: 's1', token: 9, value: { node: 1 } }, [10, 11]);
  h.release('s9', 'L', 1, [12, 13], { outcome: 'fail' });
  return h;
}

describe('JSONL', () => {
  it('round-trips a history through a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'palisade-checker-'));
    try {
      const path = join(dir, 'history.jsonl');
      const ops = sample().ops;
      await writeHistoryJsonl(path, ops);
      const back = await readHistoryJsonl(path);
      assert.deepEqual(back, ops);
      assert.equal(check(back).valid, true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads what a harness appends line by line, blank lines included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'palisade-checker-'));
    try {
      const path = join(dir, 'history.jsonl');
      const lines = sample().ops.map((op) => JSON.stringify(op));
      await writeFile(path, `${lines.join('\n\n')}\n`);
      assert.equal((await readHistoryJsonl(path)).length, lines.length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('names the line of every bad record', () => {
    const good = JSON.stringify(sample().ops[0]);
    const text = [good, '{not json', JSON.stringify({ ...sample().ops[0], id: 2, outcome: 'maybe' }), good].join('\n');
    assert.throws(
      () => parseHistoryJsonl(text),
      (err: unknown) =>
        err instanceof HistoryFormatError &&
        err.problems.some((p) => p.startsWith('line 2: invalid JSON')) &&
        err.problems.some((p) => p.startsWith('line 3') && p.includes('outcome')) &&
        err.problems.some((p) => p.includes('duplicate id')),
    );
  });

  it('accepts numeric session ids and compares them with string ones', () => {
    const text = [
      { id: 1, process: 1, session: 17, op: 'acquire', args: { lock: 'L', mode: 'exclusive' }, invokeMs: 0, completeMs: 1, outcome: 'ok', result: { token: 20 } },
      { id: 2, process: 2, op: 'read', args: { lock: 'L' }, invokeMs: 2, completeMs: 3, outcome: 'ok', result: { holders: [{ session: '17', token: 20 }] } },
    ]
      .map((o) => JSON.stringify(o))
      .join('\n');
    assert.equal(check(parseHistoryJsonl(text)).valid, true);
  });
});

describe('report', () => {
  it('summarises a linearizable history', () => {
    const h = sample();
    const report = formatReport(h.ops, check(h.ops));
    assert.match(report, /verdict: LINEARIZABLE/);
    assert.match(report, /acquire\s+1\s+0\s+1\s+2/, 'acquire: ok, fail, unknown, total');
    assert.match(report, /release\s+1\s+1\s+0\s+2/);
    assert.match(report, /all\s+7\s+1\s+2\s+10/);
  });

  it('prints the failing window and what surrounds it', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.release('s1', 'L', 5, [2, 3]);
    h.read('L', [['s1', 5]], [4, 5]);
    h.acquire('s2', 'L', 8, [6, 7]);
    const report = formatReport(h.ops, check(h.ops));
    assert.match(report, /verdict: NOT LINEARIZABLE — lock "L" \(linearizability\)/);
    assert.match(report, /failing window \(2 operations, minimal\)/);
    assert.match(report, /holders=\[s1@5\]/);
    assert.match(report, /cannot take effect/);
  });

  it('says unknown, with the reason, when the budget ran out', () => {
    const h = sample();
    const report = formatReport(h.ops, check(h.ops, { maxSteps: 1 }));
    assert.match(report, /verdict: UNKNOWN — budget exceeded/);
  });
});
