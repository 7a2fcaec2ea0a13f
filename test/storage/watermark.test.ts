// The durable watermark: a log that lost entries the node had written (and may have
// acknowledged), or a hard state older than the one it had, is a start-up error naming what
// is gone; a log the leader legitimately shortened is not.
import assert from 'node:assert/strict';
import { copyFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Entry } from '../../src/raft/types.js';
import { RaftStorage, StorageError } from '../../src/storage/index.js';
import { entryKey, HARD_STATE_KEY } from '../../src/storage/keys.js';
import { encodeHardState } from '../../src/storage/records.js';
import { readWatermark, WATERMARK_FILE, type Watermark } from '../../src/storage/watermark.js';
import { dataDirs, withRawDb } from './fixture.js';

const ID = { clusterId: 'c1', nodeId: 'n1' };
const freshDir = dataDirs('palisade-wm-');

function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push({ index: i, term, type: 'normal', data: new TextEncoder().encode(`e${i}`) });
  return out;
}

/** The valid mark in the file, or null when it is missing or corrupt. */
async function markOnDisk(dir: string): Promise<Watermark | null> {
  const found = await readWatermark(dir);
  return found.kind === 'ok' ? found.mark : null;
}

async function written(dir: string): Promise<void> {
  const s = await RaftStorage.open(dir, ID);
  await s.load();
  await s.save({ hardState: { term: 2, vote: 'n2', commit: 5 }, entries: entries(1, 10, 2) });
  await s.close();
}

test('a log that lost its last entries refuses to open and says how many are gone', async () => {
  const dir = await freshDir();
  await written(dir);
  await withRawDb(dir, async (db) => {
    for (let i = 7; i <= 10; i++) await db.del(entryKey(i));
  });
  await assert.rejects(RaftStorage.open(dir, ID), (err: unknown) => {
    assert.ok(err instanceof StorageError);
    assert.match(err.message, /the log ends at entry 6, but this node had written \(and may have acknowledged\) entries up to 10: 4 entries are gone/);
    assert.match(err.message, /member remove/);
    assert.match(err.message, /serve --join/);
    return true;
  });
});

test('a lengthened log is in the watermark file as soon as save resolves, before any flush', async () => {
  // A longer log alone is marked in the page cache and fdatasync'd later (off the commit
  // path); a process killed right after the save must still leave that mark behind, since
  // its acknowledgement may have left. Read the file while the writer is still open.
  const dir = await freshDir();
  const s = await RaftStorage.open(dir, ID);
  await s.load();
  await s.save({ hardState: { term: 2, vote: 'n2', commit: 0 }, entries: entries(1, 3, 2) });
  for (let i = 4; i <= 40; i += 4) {
    await s.save({ entries: entries(i, i + 3, 2) });
    assert.deepEqual(await markOnDisk(dir), { lastIndex: i + 3, term: 2, voted: true });
  }
  await s.close();
});

test('a mark that lags the log (a machine crash inside the flush window) opens, and is raised at once', async () => {
  const dir = await freshDir();
  await written(dir);
  // Put back the mark of a shorter log, as a crash of the machine before the flush leaves it.
  const early = await freshDir();
  const s = await RaftStorage.open(early, ID);
  await s.load();
  await s.save({ hardState: { term: 2, vote: 'n2', commit: 5 }, entries: entries(1, 6, 2) });
  await s.close();
  await copyFile(join(early, WATERMARK_FILE), join(dir, WATERMARK_FILE));
  assert.equal((await markOnDisk(dir))?.lastIndex, 6);
  const again = await RaftStorage.open(dir, ID);
  assert.deepEqual(await markOnDisk(dir), { lastIndex: 10, term: 2, voted: true });
  assert.equal((await again.load()).entries.length, 10);
  await again.close();
});

test('a lowered mark is never overtaken by a longer one that was waiting for its flush', async () => {
  // Entries 1-10 leave a mark of 10 waiting for its flush; a new leader's shorter suffix
  // (7-8, same stored term) lowers the mark to 8 before LevelDB drops 9-10. The 10 must not
  // land afterwards (a flush or close that rewrote it would claim entries LevelDB no longer
  // holds, and the node would refuse to start on a sound log).
  const dir = await freshDir();
  const s = await RaftStorage.open(dir, ID);
  await s.load();
  await s.save({ hardState: { term: 3, vote: null, commit: 0 }, entries: entries(1, 3, 2) });
  await s.save({ entries: entries(4, 10, 2) });
  await s.save({ entries: entries(7, 8, 3) });
  assert.deepEqual(await markOnDisk(dir), { lastIndex: 8, term: 3, voted: false });
  await s.close();
  assert.deepEqual(await markOnDisk(dir), { lastIndex: 8, term: 3, voted: false });
  const again = await RaftStorage.open(dir, ID);
  assert.equal((await again.load()).entries.length, 8);
  await again.close();
});

test('a hard state older than the one written (a lost vote) refuses to open', async () => {
  const dir = await freshDir();
  await written(dir);
  await withRawDb(dir, async (db) => {
    await db.put(HARD_STATE_KEY, encodeHardState({ term: 2, vote: null, commit: 5 }));
  });
  await assert.rejects(RaftStorage.open(dir, ID), /stored term and vote \(term 2\) are older than the ones this node had written \(term 2, voted\): it could vote twice/);
});

test('a deleted or corrupt watermark file is refused, never recreated silently', async () => {
  const dir = await freshDir();
  await written(dir);
  await writeFile(join(dir, WATERMARK_FILE), Buffer.alloc(64, 7));
  await assert.rejects(RaftStorage.open(dir, ID), /watermark file is corrupt/);
  await unlink(join(dir, WATERMARK_FILE));
  await assert.rejects(RaftStorage.open(dir, ID), /watermark file is missing/);
});

test('a log the leader shortened (a conflicting suffix replaced by fewer entries) opens', async () => {
  const dir = await freshDir();
  await written(dir);
  const s = await RaftStorage.open(dir, ID);
  await s.load();
  await s.save({ hardState: { term: 3, vote: null, commit: 5 }, entries: entries(7, 8, 3) });
  await s.close();
  const again = await RaftStorage.open(dir, ID);
  const st = await again.load();
  assert.equal(st.entries.length, 8);
  assert.equal(st.hardState.term, 3);
  await again.close();
});

test('each directory has its own storage id, kept across restarts', async () => {
  const a = await freshDir();
  const b = await freshDir();
  const sa = await RaftStorage.open(a, ID);
  const sb = await RaftStorage.open(b, ID);
  assert.notEqual(sa.storageId, sb.storageId);
  const id = sa.storageId;
  await sa.close();
  await sb.close();
  const again = await RaftStorage.open(a, ID);
  assert.equal(again.storageId, id);
  await again.close();
});
