// A node's data directory holds the whole lock state and its log: only the node's user may
// read it. Everything the process creates from here on is 0600 (files) / 0700 (directories)
// through the umask, which also covers the files LevelDB creates later (tables, logs,
// manifests) that no chmod at start-up could reach; a directory or files left by an older
// version with looser modes are tightened once at start-up.
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;

/** Sets the process umask so new files are private, creates `dir` 0700 if missing, and
 *  tightens the modes of what is already there. */
export function secureDataDir(dir: string): void {
  process.umask(0o077);
  mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE });
  chmodSync(dir, DATA_DIR_MODE);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    chmodSync(join(dir, entry.name), entry.isDirectory() ? DATA_DIR_MODE : DATA_FILE_MODE);
  }
}
