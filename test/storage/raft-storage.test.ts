import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Entry, Snapshot } from '../../src/raft/types.js';
import { COMPACT_CHUNK, RaftStorage, StorageError } from '../../src/storage/index.js';
import { dataDirs, withRawDb } from './fixture.js';

const ID = { clusterId: 'c1', nodeId: 'n1' };
const freshDir = dataDirs('palisade-storage-');

function entry(index: number, term: number, text = `e${index}t${term}`, type: Entry['type'] = 'normal'): Entry {
  return { index, term, type, data: new TextEncoder().encode(text) };
}

function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term));
  return out;
}

function snapshot(index: number, term: number): Snapshot {
  return { meta: { index, term, conf: { voters: ['n1', 'n2', 'n3'], learners: ['n4'] } }, data: new Uint8Array([index & 0xff, 1, 2, 3]) };
}

async function reopen(dir: string): Promise<RaftStorage> {
  return RaftStorage.open(dir, ID);
}

function entryKey(index: number): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = 0x65;
  new DataView(key.buffer).setBigUint64(1, BigInt(index));
  return key;
}

async function storedEntryIndexes(dir: string): Promise<number[]> {
  const out: number[] = [];
  await withRawDb(dir, async (db) => {
    for await (const key of db.keys({ gte: entryKey(0), lte: entryKey(2 ** 53 - 1) })) {
      out.push(Number(new DataView(key.buffer, key.byteOffset, key.byteLength).getBigUint64(1)));
    }
  });
  return out;
}

async function assertOpenFails(dir: string, pattern: RegExp): Promise<void> {
  await assert.rejects(reopen(dir), (err: unknown) => {
    assert.ok(err instanceof StorageError, `expected StorageError, got ${String(err)}`);
    assert.match(err.message, pattern);
    assert.ok(err.message.includes(dir), 'the message names the directory');
    return true;
  });
}

describe('RaftStorage', () => {
  test('a fresh directory is created, records its identity and loads empty', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    const state = await s.load();
    assert.equal(state.isNew, true);
    assert.deepEqual(state.hardState, { term: 0, vote: null, commit: 0 });
    assert.deepEqual(state.entries, []);
    assert.equal(state.snapshot, undefined);
    await s.close();
    const again = await reopen(dir);
    assert.equal((await again.load()).isNew, false);
    await again.close();
  });

  test('save/load roundtrip: hard state, normal and conf entries with binary data', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    const log = [entry(1, 1, ''), entry(2, 1, 'conf', 'conf'), { index: 3, term: 2, type: 'normal' as const, data: new Uint8Array([0, 255, 7]) }];
    await s.save({ hardState: { term: 2, vote: 'n2', commit: 2 }, entries: log });
    const state = await s.load();
    assert.deepEqual(state.hardState, { term: 2, vote: 'n2', commit: 2 });
    assert.deepEqual(state.entries, log);
    for (const e of state.entries) assert.equal(Object.getPrototypeOf(e.data), Uint8Array.prototype);
    const stats = s.stats();
    assert.ok(stats.fsyncs >= 2, 'identity record and the batch were synced');
    assert.ok(stats.bytesWritten > 0);
    assert.ok(stats.lastFsyncMs >= 0);
    await s.close();
  });

  test('appending over a conflicting suffix deletes the entries beyond the new last one', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    await s.save({ hardState: { term: 1, vote: 'n1', commit: 3 }, entries: entries(1, 10, 1) });
    await s.save({ hardState: { term: 2, vote: null, commit: 3 }, entries: entries(6, 7, 2) });
    const expected = [...entries(1, 5, 1), ...entries(6, 7, 2)];
    assert.deepEqual((await s.load()).entries, expected);
    await s.close();
    assert.deepEqual(await storedEntryIndexes(dir), [1, 2, 3, 4, 5, 6, 7]);
    const again = await reopen(dir);
    assert.deepEqual((await again.load()).entries, expected);
    // Appending right after the last entry keeps everything.
    await again.save({ entries: entries(8, 9, 2) });
    assert.deepEqual((await again.load()).entries.map((e) => e.index), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await again.close();
  });

  test('save refuses batches that would leave a gap or write under the snapshot', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: entries(1, 3, 1) });
    await assert.rejects(s.save({ entries: entries(5, 6, 1) }), /gap/);
    await assert.rejects(s.save({ entries: [entry(4, 1), entry(6, 1)] }), /not contiguous/);
    await assert.rejects(s.save({ hardState: { term: 1, vote: null, commit: 9 }, entries: [] }), /beyond the last index/);
    await s.saveSnapshot(snapshot(2, 1));
    await assert.rejects(s.save({ entries: entries(2, 4, 1) }), /covered by the snapshot/);
    // Refused batches do not poison the storage.
    await s.save({ entries: entries(4, 4, 1) });
    assert.deepEqual((await s.load()).entries.map((e) => e.index), [3, 4]);
    await s.close();
  });

  test('compact deletes a long range a chunk at a time: a write queued meanwhile goes in between, and a compaction cut short is finished by the next', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    const last = 2 * COMPACT_CHUNK + 500;
    const upTo = last - 100;
    const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    await s.save({ hardState: { term: 1, vote: 'n1', commit: last }, entries: entries(1, last, 1) });
    await s.saveSnapshot(snapshot(upTo, 1));
    const compaction = s.compact(upTo).then(
      () => null,
      (err: unknown) => err,
    );
    await s.save({ entries: entries(last + 1, last + 1, 1) });
    // Closing now stops the compaction at its next chunk (a crash would, anywhere).
    await s.close();
    assert.match(String(await compaction), /closed/);
    const left = await storedEntryIndexes(dir);
    assert.ok(left[0]! > 1, 'the first chunk was deleted before the write');
    assert.ok(left[0]! <= upTo, 'the write went in before the whole range was deleted');
    assert.deepEqual(left, range(left[0]!, last + 1));

    const again = await reopen(dir);
    assert.deepEqual((await again.load()).entries.map((e) => e.index), range(upTo + 1, last + 1), 'load hides what the snapshot covers');
    await again.compact(upTo);
    await again.close();
    assert.deepEqual(await storedEntryIndexes(dir), range(upTo + 1, last + 1));
  });

  test('a local snapshot hides the entries it covers; compact deletes them', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    await s.save({ hardState: { term: 1, vote: 'n1', commit: 8 }, entries: entries(1, 10, 1) });
    await s.saveSnapshot(snapshot(5, 1));
    let state = await s.load();
    assert.deepEqual(state.snapshot, snapshot(5, 1));
    assert.deepEqual(state.entries, entries(6, 10, 1));
    await assert.rejects(s.compact(6), /not covered by the snapshot/);
    await s.compact(3); // keep a tail
    await s.close();
    assert.deepEqual(await storedEntryIndexes(dir), [4, 5, 6, 7, 8, 9, 10]);

    const again = await reopen(dir);
    state = await again.load();
    assert.deepEqual(state.entries, entries(6, 10, 1));
    await again.compact(5);
    await again.save({ entries: entries(11, 12, 1) });
    await again.saveSnapshot(snapshot(12, 1));
    await again.compact(12);
    await again.close();
    assert.deepEqual(await storedEntryIndexes(dir), []);
    const third = await reopen(dir);
    state = await third.load();
    assert.deepEqual(state.entries, []);
    assert.equal(state.snapshot?.meta.index, 12);
    await third.save({ entries: entries(13, 13, 2), hardState: { term: 2, vote: null, commit: 13 } });
    assert.deepEqual((await third.load()).entries, entries(13, 13, 2));
    await assert.rejects(third.saveSnapshot(snapshot(4, 1)), /older/);
    await third.close();
  });

  test('a snapshot from the leader replaces the snapshot and the whole log', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    await s.save({ hardState: { term: 1, vote: null, commit: 2 }, entries: entries(1, 6, 1) });
    await s.save({ hardState: { term: 3, vote: null, commit: 20 }, snapshot: snapshot(20, 3), entries: entries(21, 22, 3) });
    const state = await s.load();
    assert.deepEqual(state.snapshot, snapshot(20, 3));
    assert.deepEqual(state.entries, entries(21, 22, 3));
    await assert.rejects(s.save({ entries: [], snapshot: snapshot(10, 2) }), /older/);
    await assert.rejects(s.save({ entries: entries(25, 25, 3), snapshot: snapshot(23, 3) }), /right after the snapshot/);
    await s.close();
    assert.deepEqual(await storedEntryIndexes(dir), [21, 22]);
    const again = await reopen(dir);
    assert.deepEqual(await again.load(), { ...state, isNew: false });
    await again.close();
  });

  test('restart recovers exactly what was saved (model check over random histories)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ back: fc.nat(6), count: fc.integer({ min: 0, max: 5 }), bumpTerm: fc.boolean() }), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          const dir = await freshDir();
          const s = await reopen(dir);
          let model: Entry[] = [];
          let term = 1;
          for (const step of steps) {
            if (step.bumpTerm) term += 1;
            const start = Math.max(1, model.length + 1 - step.back);
            const batch = entries(start, start + step.count - 1, term);
            if (batch.length > 0) model = [...model.slice(0, start - 1), ...batch];
            await s.save({ hardState: { term, vote: null, commit: Math.min(model.length, 1) }, entries: batch });
          }
          await s.close();
          const again = await reopen(dir);
          const state = await again.load();
          await again.close();
          assert.deepEqual(state.entries, model);
          assert.equal(state.hardState.term, term);
          assert.deepEqual(await storedEntryIndexes(dir), model.map((e) => e.index));
        },
      ),
      { numRuns: 25 },
    );
  });

  test('a directory of another cluster or another node is refused', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: entries(1, 2, 1) });
    await s.close();
    await assert.rejects(RaftStorage.open(dir, { clusterId: 'other', nodeId: 'n1' }), (err: unknown) => {
      assert.ok(err instanceof StorageError);
      assert.match(err.message, /cluster "c1", not "other"/);
      assert.ok(err.message.includes(dir));
      return true;
    });
    await assert.rejects(RaftStorage.open(dir, { clusterId: 'c1', nodeId: 'n2' }), /node "n1", not "n2"/);
    // Still intact for its owner.
    const again = await reopen(dir);
    assert.equal((await again.load()).entries.length, 2);
    await again.close();
  });

  test('a directory already open in this or another process is a clear error', async () => {
    const dir = await freshDir();
    const s = await reopen(dir);
    await assertOpenFails(dir, /cannot open the database/);
    await s.close();
  });

  describe('corrupt or truncated data is a StorageError, never a reset', () => {
    async function prepared(): Promise<string> {
      const dir = await freshDir();
      const s = await reopen(dir);
      await s.save({ hardState: { term: 2, vote: 'n1', commit: 4 }, entries: [...entries(1, 3, 1), ...entries(4, 5, 2)] });
      await s.close();
      return dir;
    }

    test('garbage under an entry key', async () => {
      const dir = await prepared();
      await withRawDb(dir, (db) => db.put(entryKey(3), new Uint8Array([0xc1, 0xff, 0x00])));
      await assertOpenFails(dir, /corrupt value under "entry 3"/);
      // The error did not touch the data: the other entries are still there.
      assert.deepEqual(await storedEntryIndexes(dir), [1, 2, 3, 4, 5]);
    });

    test('a well-formed msgpack value of the wrong shape under an entry key', async () => {
      const dir = await prepared();
      await withRawDb(dir, (db) => db.put(entryKey(2), new Uint8Array([0x93, 0x01, 0x05, 0xc4, 0x00])));
      await assertOpenFails(dir, /entry 2.*type/);
    });

    test('garbage hard state, snapshot or identity record', async () => {
      for (const key of ['hard', 'snap', 'meta']) {
        const dir = await prepared();
        await withRawDb(dir, (db) => db.put(new TextEncoder().encode(key), new TextEncoder().encode('not msgpack at all {')));
        await assertOpenFails(dir, new RegExp(`corrupt value under "${key}"`));
      }
    });

    test('a gap in the log', async () => {
      const dir = await prepared();
      await withRawDb(dir, (db) => db.del(entryKey(2)));
      await assertOpenFails(dir, /gap: expected entry 2, found entry 3/);
    });

    test('a log truncated below the commit index', async () => {
      const dir = await prepared();
      await withRawDb(dir, async (db) => {
        await db.del(entryKey(5));
        await db.del(entryKey(4));
      });
      await assertOpenFails(dir, /truncated: commit index 4 is beyond the last entry 3/);
    });

    test('terms that decrease along the log', async () => {
      const dir = await prepared();
      await withRawDb(dir, (db) => db.put(entryKey(5), new Uint8Array([0x93, 0x01, 0x00, 0xc4, 0x00])));
      await assertOpenFails(dir, /entry 5 has term 1, lower than the term 2/);
    });

    test('data without an identity record', async () => {
      const dir = await prepared();
      await withRawDb(dir, (db) => db.del(new TextEncoder().encode('meta')));
      await assertOpenFails(dir, /no identity record/);
    });
  });
});
