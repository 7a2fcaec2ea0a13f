// Opening finds problems before anything is rewritten, and names the real cause: the files
// LevelDB's recovery rewrites are copied aside first and kept when the node refuses; a held
// lock and a full disk are said as such.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Entry } from '../../src/raft/types.js';
import { RaftStorage, StorageError } from '../../src/storage/index.js';
import { explainLevelError, PREOPEN_DIR } from '../../src/storage/preopen.js';
import { dataDirs } from './fixture.js';

const ID = { clusterId: 'c1', nodeId: 'n1' };
const freshDir = dataDirs('palisade-preopen-');

function entries(from: number, to: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push({ index: i, term: 1, type: 'normal', data: new TextEncoder().encode(`entry-${i}-${'x'.repeat(200)}`) });
  return out;
}

test('a directory held by another open is refused as locked, and the copy is not left behind', async () => {
  const dir = await freshDir();
  const s = await RaftStorage.open(dir, ID);
  await assert.rejects(RaftStorage.open(dir, ID), /the directory is locked by another process .*another palisade node is running on this data directory/);
  assert.equal(existsSync(join(dir, PREOPEN_DIR)), false);
  await s.close();
});

test('a truncated .log is refused, and the .log as it was before LevelDB recovered it is kept', async () => {
  const dir = await freshDir();
  const s = await RaftStorage.open(dir, ID);
  await s.load();
  for (let i = 1; i <= 50; i += 10) await s.save({ hardState: { term: 1, vote: 'n1', commit: 0 }, entries: entries(i, i + 9) });
  await s.close();
  const log = readdirSync(dir).filter((f) => f.endsWith('.log') && f !== 'LOG').sort().pop()!;
  const size = statSync(join(dir, log)).size;
  truncateSync(join(dir, log), Math.floor(size / 2));
  const before = readFileSync(join(dir, log));
  await assert.rejects(RaftStorage.open(dir, ID), (err: unknown) => {
    assert.ok(err instanceof StorageError);
    assert.match(err.message, /entries are gone/);
    assert.match(err.message, /the files LevelDB's recovery rewrote are kept as they were in .*preopen-copy/);
    return true;
  });
  assert.deepEqual(readFileSync(join(dir, PREOPEN_DIR, log)), before);
});

test('a successful open leaves no copy', async () => {
  const dir = await freshDir();
  const s = await RaftStorage.open(dir, ID);
  await s.load();
  await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: entries(1, 3) });
  await s.close();
  const again = await RaftStorage.open(dir, ID);
  assert.equal(existsSync(join(dir, PREOPEN_DIR)), false);
  await again.close();
});

test('LevelDB errors are named by their cause', () => {
  const enospc = Object.assign(new Error('IO error: /d/000005.log: No space left on device'), { code: 'LEVEL_IO_ERROR' });
  assert.match(explainLevelError(new Error('Database failed to open', { cause: enospc })), /^the disk is full \(ENOSPC/);
  assert.match(explainLevelError(new Error('x', { cause: new Error('Corruption: checksum mismatch in /d/000007.ldb') })), /corruption .*000007\.ldb/);
});
