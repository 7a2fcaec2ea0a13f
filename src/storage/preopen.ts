// Open without destroying evidence. LevelDB's recovery on open replays the write-ahead
// `.log` files into a new table and deletes them, and with its default (non-paranoid)
// checks it skips records it cannot read: a damaged directory is rewritten before our own
// checks can refuse it. So before opening, the files recovery touches (the `.log` files,
// CURRENT and the MANIFEST) are copied into `preopen-copy/`; once the open and every check
// passed, the copy is deleted. When the node refuses to start, the copy stays and the
// message points at it. And the errors LevelDB reports are turned into the real cause.
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

export const PREOPEN_DIR = 'preopen-copy';

/** Copy what LevelDB's recovery may rewrite; returns the copy's path, or null when the
 *  directory has nothing yet (a first start). */
export async function copyAside(dir: string): Promise<string | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return null;
  }
  const touched = names.filter((n) => n === 'CURRENT' || n.startsWith('MANIFEST-') || (n.endsWith('.log') && n !== 'LOG'));
  if (touched.length === 0) return null;
  const to = join(dir, PREOPEN_DIR);
  await rm(to, { recursive: true, force: true });
  await mkdir(to, { mode: 0o700 });
  for (const n of touched) await copyFile(join(dir, n), join(to, n));
  return to;
}

export async function dropCopy(copy: string | null): Promise<void> {
  if (copy) await rm(copy, { recursive: true, force: true });
}

function chain(err: unknown): { codes: string[]; text: string } {
  const codes: string[] = [];
  const texts: string[] = [];
  for (let e: unknown = err, i = 0; e instanceof Error && i < 5; e = e.cause, i++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string') codes.push(code);
    texts.push(e.message);
  }
  return { codes, text: texts.join(': ') };
}

/** The real cause of a LevelDB failure, in words an operator can act on. */
export function explainLevelError(err: unknown): string {
  const { codes, text } = chain(err);
  if (codes.includes('LEVEL_LOCKED') || /\block\b.*(already held|temporarily unavailable)/i.test(text)) {
    return `the directory is locked by another process (${text}): another palisade node is running on this data directory`;
  }
  if (codes.includes('ENOSPC') || /no space left|ENOSPC/i.test(text)) return `the disk is full (ENOSPC: ${text})`;
  if (/corruption/i.test(text) || codes.includes('LEVEL_CORRUPTION')) return `LevelDB reports corruption (${text})`;
  if (/permission denied|EACCES|EPERM/i.test(text)) return `permission denied (${text})`;
  return text;
}
