// The nodes run from dist/: rebuild it when a source file is newer than the build.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

export function ensureBuilt(root: string, cli: string, log: (line: string) => void): void {
  let built = 0;
  try {
    built = statSync(cli).mtimeMs;
  } catch {
    // not built
  }
  if (built > 0 && newestMtime(join(root, 'src')) <= built) return;
  log(built ? 'src/ is newer than dist/: npm run build' : 'no dist/: npm run build');
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}
