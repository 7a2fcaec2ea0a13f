// Data directories written by root belong to the service's user. An operator who runs
// `palisade serve --join`, `snapshot restore` or `recover` with sudo would otherwise leave a
// 0700 directory of root's that the unit (User=palisade) cannot open. The rule: when run as
// root, what these commands create in a data directory belongs to the owner of the directory
// that holds it (its parent, or the nearest ancestor that exists), as /var/lib/palisade
// belongs to palisade (the unit's StateDirectory, docs/deployment.md). A parent owned by root
// changes nothing.
import { chownSync, existsSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export interface DataOwner {
  readonly uid: number;
  readonly gid: number;
  /** The directory whose owner this is. */
  readonly from: string;
}

/** Whom `dataDir` should belong to, or null when nothing is to change (not root, or the
 *  holding directory is root's). Call it before creating anything. */
export function dataOwnerOf(dataDir: string): DataOwner | null {
  if (process.getuid?.() !== 0) return null;
  let holder = dirname(resolve(dataDir));
  while (!existsSync(holder) && dirname(holder) !== holder) holder = dirname(holder);
  const st = statSync(holder);
  return st.uid === 0 ? null : { uid: st.uid, gid: st.gid, from: holder };
}

/** Gives `dataDir` and everything in it, and the directories created above it below
 *  `owner.from`, to the owner. */
export function giveToOwner(dataDir: string, owner: DataOwner): void {
  const dir = resolve(dataDir);
  const above = relative(owner.from, dirname(dir)).split(sep).filter(Boolean);
  for (let i = 1; i <= above.length; i++) {
    const path = join(owner.from, ...above.slice(0, i));
    if (existsSync(path)) chownSync(path, owner.uid, owner.gid);
  }
  const walk = (path: string): void => {
    const st = lstatSync(path);
    if (st.uid !== owner.uid || st.gid !== owner.gid) chownSync(path, owner.uid, owner.gid);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  if (existsSync(dir)) walk(dir);
}

/** `palisade serve` as root: the data directory (what exists of it) goes to its owner, and the
 *  process becomes that user, so that the files LevelDB creates from now on are theirs too.
 *  Returns the owner it switched to, or null. */
export function becomeDataOwner(dataDir: string): DataOwner | null {
  const owner = dataOwnerOf(dataDir);
  if (owner === null) return null;
  giveToOwner(dataDir, owner);
  process.setgroups?.([owner.gid]);
  process.setgid?.(owner.gid);
  process.setuid?.(owner.uid);
  return owner;
}
