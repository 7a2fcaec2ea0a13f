// The NodeStore contract (src/storage/node-store.ts), one suite run against both
// implementations: LevelDB (production) and the in-memory store (in-process clusters and the
// simulator). "Reopen" is a restart: a new store over the same directory or disk.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Entry, Snapshot } from '../../src/raft/types.js';
import { MemoryDisk, MemoryStore } from '../../src/inproc/memory-store.js';
import { systemClock } from '../../src/server/clock.js';
import type { NodeStore } from '../../src/storage/node-store.js';
import { RaftStorage } from '../../src/storage/index.js';

interface Kind {
  readonly name: string;
  /** A fresh place to keep data; `open` opens (or reopens) a store on it. */
  fresh(): { open(): Promise<NodeStore> };
}

const scratch = mkdtempSync(join(tmpdir(), 'palisade-store-contract-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;

const KINDS: readonly Kind[] = [
  {
    name: 'LevelDB (RaftStorage)',
    fresh: () => {
      const dir = join(scratch, `d${++dirs}`);
      return { open: () => RaftStorage.open(dir, { clusterId: 'contract', nodeId: 'n1' }) };
    },
  },
  {
    name: 'memory (MemoryStore)',
    fresh: () => {
      const disk = new MemoryDisk(`d${++dirs}`);
      return { open: async () => new MemoryStore(disk, systemClock) };
    },
  },
];

const entry = (index: number, term: number, text = `e${index}`): Entry => ({ index, term, type: 'normal', data: new TextEncoder().encode(text) });

for (const kind of KINDS) {
  describe(`NodeStore contract: ${kind.name}`, () => {
    test('what a save made durable is loaded after a restart: hard state and contiguous entries', async () => {
      const place = kind.fresh();
      let s = await place.open();
      const first = await s.load();
      assert.equal(first.isNew, true);
      assert.deepEqual(first.entries, []);
      await s.save({ hardState: { term: 2, vote: 'n2', commit: 1 }, entries: [entry(1, 1), entry(2, 2)] });
      const id = s.storageId;
      await s.close();
      s = await place.open();
      const again = await s.load();
      assert.equal(again.isNew, false);
      assert.equal(s.storageId, id, 'the storage id outlives a restart');
      assert.deepEqual(again.hardState, { term: 2, vote: 'n2', commit: 1 });
      assert.deepEqual(again.entries.map((e) => [e.index, e.term]), [[1, 1], [2, 2]]);
      assert.equal(new TextDecoder().decode(again.entries[1]!.data), 'e2');
      await s.close();
    });

    test('appending at an index replaces the log from there on (a new leader overwrote it)', async () => {
      const place = kind.fresh();
      let s = await place.open();
      await s.load();
      await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [entry(1, 1), entry(2, 1), entry(3, 1)] });
      await s.save({ hardState: { term: 2, vote: null, commit: 0 }, entries: [entry(2, 2, 'new')] });
      await s.close();
      s = await place.open();
      const l = await s.load();
      assert.deepEqual(l.entries.map((e) => [e.index, e.term]), [[1, 1], [2, 2]]);
      await s.close();
    });

    test('a snapshot and compaction: the entries after the snapshot remain', async () => {
      const place = kind.fresh();
      let s = await place.open();
      await s.load();
      await s.save({ hardState: { term: 1, vote: null, commit: 4 }, entries: [1, 2, 3, 4].map((i) => entry(i, 1)) });
      const snap: Snapshot = { meta: { index: 2, term: 1, conf: { voters: ['n1'], learners: [] } }, data: new Uint8Array([9, 9]) };
      await s.saveSnapshot(snap);
      await s.compact(2);
      await s.close();
      s = await place.open();
      const l = await s.load();
      assert.equal(l.snapshot?.meta.index, 2);
      assert.deepEqual([...l.snapshot!.data], [9, 9]);
      assert.deepEqual(l.entries.map((e) => e.index), [3, 4]);
      await s.close();
    });

    test('a snapshot sent by the leader, saved with a Ready, replaces the whole log', async () => {
      const place = kind.fresh();
      let s = await place.open();
      await s.load();
      await s.save({ hardState: { term: 1, vote: null, commit: 3 }, entries: [1, 2, 3].map((i) => entry(i, 1)) });
      const snap: Snapshot = { meta: { index: 10, term: 2, conf: { voters: ['n1'], learners: [] } }, data: new Uint8Array([7]) };
      await s.save({ hardState: { term: 2, vote: null, commit: 10 }, snapshot: snap, entries: [entry(11, 2)] });
      await s.close();
      s = await place.open();
      const l = await s.load();
      assert.equal(l.snapshot?.meta.index, 10);
      assert.deepEqual(l.entries.map((e) => e.index), [11]);
      assert.equal(l.hardState.commit, 10);
      await s.close();
    });

    test('the joining mark and the peers\' storage ids are durable', async () => {
      const place = kind.fresh();
      let s = await place.open();
      await s.load();
      assert.equal(await s.isJoining(), false);
      await s.markJoining();
      await s.recordPeerStorageId('n2', 'id-2');
      await s.recordPeerStorageId('n3', 'id-3');
      await s.forgetPeerStorageId('n3');
      await s.close();
      s = await place.open();
      await s.load();
      assert.equal(await s.isJoining(), true);
      assert.deepEqual([...(await s.peerStorageIds())], [['n2', 'id-2']]);
      await s.close();
    });

    test('stats count the synchronous writes', async () => {
      const s = await kind.fresh().open();
      await s.load();
      const before = s.stats().fsyncs;
      await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [entry(1, 1)] });
      assert.ok(s.stats().fsyncs > before);
      assert.ok(s.stats().bytesWritten > 0);
      await s.close();
    });
  });
}

describe('the in-memory store models what a crash and a full disk do', () => {
  test('a write in flight when the node crashes is lost whole; the next incarnation loads what was durable', async () => {
    const disk = new MemoryDisk('crash');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slowClock = { ...systemClock, setTimeout: (fn: () => void) => (void gate.then(fn), {}) };
    disk.latencyMs = () => 1;
    const s = new MemoryStore(disk, slowClock);
    await s.load();
    const inFlight = s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [entry(1, 1)] });
    disk.crash();
    release();
    await assert.rejects(inFlight, /crashed before this write was durable/);
    disk.latencyMs = () => 0;
    const next = new MemoryStore(disk, systemClock);
    assert.deepEqual((await next.load()).entries, []);
  });

  test('a failed write fails every later one (memory and disk may disagree)', async () => {
    const disk = new MemoryDisk('full');
    const s = new MemoryStore(disk, systemClock);
    await s.load();
    disk.failure = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    await assert.rejects(s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [entry(1, 1)] }), /ENOSPC/);
    disk.failure = null;
    assert.throws(() => s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [] }), /a write failed earlier/);
  });
});
