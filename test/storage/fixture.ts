// What the storage tests share: data directories that do not exist yet (removed after the
// file's tests), and a raw LevelDB handle on one, to damage or inspect what storage wrote.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { Level } from 'level';

/** A new, not yet existing data directory under a temp folder removed after this file's tests. */
export function dataDirs(prefix: string): () => Promise<string> {
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return join(dir, 'data');
  };
}

/** Opens the directory's LevelDB directly (storage closed), runs `fn`, closes it. */
export async function withRawDb(dir: string, fn: (db: Level<Uint8Array, Uint8Array>) => Promise<void>): Promise<void> {
  const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}
