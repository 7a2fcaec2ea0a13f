// Writing a backup so that a crash leaves either the old file or the whole new one: write a
// temporary file beside it, fsync it, rename it over, fsync the directory (the rename itself
// must survive a power cut).
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { BackupFormatError, decodeBackup, type Backup, type DecodeBackupOptions } from './format.js';

/** `like`: the file's mode and owner are to be those of the file it replaces (a config
 *  file the service reads through its group); by default it is private (0600). */
export async function writeFileAtomically(path: string, bytes: Uint8Array | AsyncIterable<Uint8Array>, like?: { readonly mode: number; readonly uid: number; readonly gid: number }): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  const mode = like ? like.mode & 0o777 : 0o600;
  const fh = await open(tmp, 'wx', mode);
  try {
    if (like) {
      await fh.chmod(mode); // the umask narrowed what open gave
      await fh.chown(like.uid, like.gid); // refused unless root, or its owner in that group
    }
    // Pieces as they come: a backup is written while it is read from the node, never held whole.
    if (bytes instanceof Uint8Array) await fh.writeFile(bytes);
    else for await (const piece of bytes) await fh.write(piece);
    await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** Reads and checks a backup file against `keys` (decodeBackup); a damaged one is a
 *  BackupFormatError naming the file. */
export async function readBackupFile(path: string, keys: readonly Uint8Array[] | null, options: DecodeBackupOptions = {}): Promise<Backup> {
  const bytes = await readFile(path);
  try {
    return decodeBackup(bytes, keys, options);
  } catch (e) {
    if (e instanceof BackupFormatError) throw new BackupFormatError(`${path}: ${e.message}`);
    throw e;
  }
}
