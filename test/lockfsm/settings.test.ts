// The cluster's settings are state of the machine (src/lockfsm/config.ts): apply reads no
// node's file. Two machines started with different files, fed the same log (which begins,
// as every log a leader writes does, with the settings), answer alike and end alike.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { DEFAULT_MACHINE_CONFIG, LockMachine, type ConfigureCommand, type MachineConfig } from '../../src/lockfsm/index.js';
import { Driver, TEST_CONFIG } from './driver.js';
import { outputText } from '../sim/lock-check.js';
import { steps, WORKLOAD_CONFIG, Workload } from './workload.js';

/** A node's file that disagrees with WORKLOAD_CONFIG on every bound it can. */
const OTHER_FILE: MachineConfig = {
  ...DEFAULT_MACHINE_CONFIG,
  minTtlMs: 4_000,
  defaultLockDelayMs: 0,
  maxLocksPerSession: 1,
  maxSessions: 2,
  maxValueBytes: 2,
  maxKvTotalBytes: 5,
  maxLedgerEntries: 1,
  maxPendingResultsPerSession: 2,
};

describe('apply reads no local config', () => {
  it('machines with different files replay one log to the same answers and the same bytes', () => {
    fc.assert(
      fc.property(steps(60), (all) => {
        const w = new Workload(false, WORKLOAD_CONFIG, DEFAULT_MACHINE_CONFIG);
        w.run(all);
        const other = new LockMachine(OTHER_FILE);
        for (const e of w.log) {
          const applied = other.apply(e.index, e.cmd);
          assert.equal(outputText(applied), outputText(e.applied), `entry ${e.index} (${e.cmd.type}) answered alike`);
        }
        assert.deepEqual(other.snapshot(), w.m.snapshot());
        assert.deepEqual(other.settings, w.m.settings);
      }),
      { numRuns: 150 },
    );
  });

  it('without the settings entry they do not: the test can fail', () => {
    const a = new Driver(WORKLOAD_CONFIG);
    const b = new Driver(OTHER_FILE);
    const cmd = { type: 'openSession', ttlMs: 2_000 } as const;
    assert.notEqual(outputText(a.apply(cmd)), outputText(b.apply(cmd)));
  });
});

describe('configure', () => {
  it('changes the settings, says which changed, and an initial seed applies only once', () => {
    const d = new Driver(OTHER_FILE);
    assert.equal(d.m.configured, false);
    const seed = d.apply({ type: 'configure', settings: { ...TEST_CONFIG, maxSessions: 7 }, initial: true });
    assert.equal(seed.result.type, 'settings');
    assert.equal(d.m.settings.maxSessions, 7);
    assert.equal(d.m.configured, true);
    // The changes are counted from the defaults, not from this node's file.
    assert.deepEqual(seed.result.type === 'settings' && seed.result.changed, ['defaultLockDelayMs', 'maxSessions']);
    assert.deepEqual(seed.events, [{ type: 'settingsChanged', changed: ['defaultLockDelayMs', 'maxSessions'] }]);
    const second = d.apply({ type: 'configure', settings: { ...TEST_CONFIG, maxSessions: 9 }, initial: true });
    assert.deepEqual(second.result.type === 'settings' && second.result.changed, []);
    assert.equal(d.m.settings.maxSessions, 7, 'a later seed changes nothing');
    const set = d.apply({ type: 'configure', settings: { maxSessions: 3 } });
    assert.deepEqual(set.result.type === 'settings' && set.result.changed, ['maxSessions']);
    assert.equal(d.m.settings.maxSessions, 3);
  });

  it('refuses unknown settings, bad values and bounds out of order, changing nothing', () => {
    const d = new Driver();
    const before = d.m.settings;
    for (const settings of [{ maxSession: 3 }, { maxSessions: -1 }, { maxSessions: 0 }, { minTtlMs: 5_000_000 }, {}]) {
      const r = d.apply({ type: 'configure', settings } as unknown as ConfigureCommand);
      assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT', JSON.stringify(settings));
    }
    assert.equal(d.m.settings, before);
    assert.equal(d.m.configured, false);
  });

  it('a lowered bound refuses growth from then on and keeps what is stored', () => {
    const d = new Driver();
    const s = d.open();
    const t = d.open();
    d.apply({ type: 'configure', settings: { maxSessions: 1 } });
    assert.equal(d.apply({ type: 'openSession', ttlMs: 10_000 }).result.type, 'error');
    assert.ok(d.m.session(s) && d.m.session(t));
  });

  it('settings and cluster time survive a snapshot; a version-1 snapshot reads as never configured', () => {
    const d = new Driver();
    d.apply({ type: 'configure', settings: { maxSessions: 42 } });
    const s = d.open();
    const t = Driver.token(d.acquire(s, 'L').result);
    d.apply({ type: 'beginOp', session: s, seq: d.seq(s), opKey: 'op', fence: { lock: 'L', token: t }, at: 777 });
    const r = LockMachine.restore(d.m.snapshot(), OTHER_FILE);
    assert.equal(r.settings.maxSessions, 42);
    assert.equal(r.configured, true);
    assert.equal(r.clock, 777);
    assert.deepEqual(r.snapshot(), d.m.snapshot());

    // A version-1 snapshot: no settings, clock or owners.
    const v1 = new Packr({ useRecords: false, variableMapSize: true, moreTypes: false }).pack({
      format: 'palisade.lockfsm',
      version: 1,
      appliedIndex: 3,
      sessions: [[1, 5_000, 0, []]],
      locks: [],
      elections: [],
      kv: [['k', new Uint8Array([1]), 2]],
      ledgerRunning: [],
      ledgerDone: [],
    });
    const old = LockMachine.restore(new Uint8Array(v1), OTHER_FILE);
    assert.equal(old.configured, false);
    assert.deepEqual(old.settings, OTHER_FILE, "until a configure entry, the node's own file (as the log was written under)");
    assert.equal(old.clock, 0);
    assert.equal(old.kvGet('k')?.revision, 2);
  });
});

describe('byte budgets per owner', () => {
  const owned = (d: Driver, owner: string): number => {
    const r = d.apply({ type: 'openSession', ttlMs: 10_000, owner });
    if (r.result.type !== 'session') throw new Error(JSON.stringify(r.result));
    return r.result.session;
  };
  const put = (d: Driver, s: number, key: string, bytes: number) =>
    d.apply({ type: 'put', session: s, seq: d.seq(s), key, value: new Uint8Array(bytes) }).result;

  it('one token cannot fill the key-value space for the others', () => {
    const d = new Driver({ ...TEST_CONFIG, maxKvTotalBytes: 1_000, maxKvBytesPerOwner: 400 });
    const jobs = owned(d, 'jobs');
    const batch = owned(d, 'batch');
    assert.equal(put(d, jobs, 'j1', 300).type, 'written');
    const over = put(d, jobs, 'j2', 300);
    assert.equal(over.type === 'error' && over.code, 'LIMIT_EXCEEDED');
    assert.match(over.type === 'error' ? over.message : '', /token "jobs".*budgets\.kvBytesPerToken/);
    assert.equal(put(d, batch, 'b1', 300).type, 'written', 'another token still writes');
    // Overwriting its own key is judged by the difference; deleting gives the bytes back.
    assert.equal(put(d, jobs, 'j1', 390).type, 'written');
    d.apply({ type: 'delete', session: jobs, seq: d.seq(jobs), key: 'j1' });
    assert.equal(put(d, jobs, 'j2', 390).type, 'written');
    // The total still bounds everyone together.
    const anon = d.open();
    const total = put(d, anon, 'a', 500);
    assert.equal(total.type === 'error' && total.code, 'LIMIT_EXCEEDED');
    assert.match(total.type === 'error' ? total.message : '', /budgets\.kvBytes\b/);
  });

  it('the ledger and the elections have budgets of their own, given back on prune and resign', () => {
    const d = new Driver({ ...TEST_CONFIG, maxLedgerBytesPerOwner: 1_000, maxElectionBytesPerOwner: 300, ledgerRetentionMs: 10 });
    const s = owned(d, 'jobs');
    const t = Driver.token(d.acquire(s, 'L').result);
    const fence = { lock: 'L', token: t };
    const begin = (opKey: string) => d.apply({ type: 'beginOp', session: s, seq: d.seq(s), opKey, fence, at: 1 }).result;
    const complete = (opKey: string, bytes: number) =>
      d.apply({ type: 'completeOp', session: s, seq: d.seq(s), opKey, fence, result: new Uint8Array(bytes), at: 1 }).result;
    assert.equal(begin('a').type, 'run');
    assert.equal(complete('a', 800).type, 'completed');
    assert.equal(begin('b').type, 'run');
    const big = complete('b', 800);
    assert.equal(big.type === 'error' && big.code, 'LIMIT_EXCEEDED');
    d.apply({ type: 'pruneOps', at: 100 });
    assert.equal(d.m.op('a'), null);
    assert.equal(complete('b', 800).type, 'completed', 'pruning gave the bytes back');

    const campaign = (value: string) => d.apply({ type: 'campaign', session: s, seq: d.seq(s), election: 'e', value }).result;
    const r = campaign('x'.repeat(100));
    assert.equal(r.type, 'leader');
    const proclaim = d.apply({ type: 'proclaim', session: s, seq: d.seq(s), election: 'e', token: r.type === 'leader' ? r.token : 0, value: 'y'.repeat(400) }).result;
    assert.equal(proclaim.type === 'error' && proclaim.code, 'LIMIT_EXCEEDED');
    assert.equal(d.m.stats().electionBytes, 64 + 1 + 100);
    d.apply({ type: 'resign', session: s, seq: d.seq(s), election: 'e', token: r.type === 'leader' ? r.token : 0 });
    assert.equal(d.m.stats().electionBytes, 0);
  });

  it("a session's kept answers are bounded in bytes, not only in count", () => {
    const d = new Driver({ ...TEST_CONFIG, maxPendingResultBytesPerSession: 10_000 });
    const s = d.open();
    const t = Driver.token(d.acquire(s, 'L').result);
    const fence = { lock: 'L', token: t };
    d.apply({ type: 'beginOp', session: s, seq: d.seq(s), opKey: 'o', fence, at: 1 });
    d.apply({ type: 'completeOp', session: s, seq: d.seq(s), opKey: 'o', fence, result: new Uint8Array(6_000), at: 1 });
    // Asking again (new seqs, never acknowledged) keeps a copy of the result per answer.
    const ask = () => d.apply({ type: 'beginOp', session: s, seq: d.seq(s), opKey: 'o', fence, at: 1 }).result;
    assert.equal(ask().type, 'done');
    assert.equal(ask().type, 'done');
    const third = ask();
    assert.equal(third.type === 'error' && third.code, 'LIMIT_EXCEEDED');
  });

  it('restored machines count what they hold', () => {
    const d = new Driver({ ...TEST_CONFIG, maxKvBytesPerOwner: 100 });
    const s = owned(d, 'jobs');
    put(d, s, 'k', 90);
    const r = LockMachine.restore(d.m.snapshot(), { ...TEST_CONFIG, maxKvBytesPerOwner: 100 });
    const rd = Object.assign(Object.create(Driver.prototype) as Driver, { m: r, index: d.index, seqs: new Map([[s, 1]]) });
    const over = put(rd, s, 'k2', 20);
    assert.equal(over.type === 'error' && over.code, 'LIMIT_EXCEEDED');
  });
});
