// Another commit's build, for the A side of `npm run bench -- --abba REF`: a detached git
// worktree of REF in the OS's temporary folder, this checkout's node_modules linked into it
// (an `npm ci` per comparison would take minutes and fetch what is already here), and its own
// `npm run build`. The worktree goes when the comparison ends, also when it fails or is
// interrupted (Ctrl-C: bench/cluster.ts turns the signal into process.exit, which runs the
// 'exit' listener below).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliOf } from '../test/support/node-process.js';
import { git } from './lib/git.js';

export interface RefBuild {
  /** As given (HEAD~1). */
  readonly ref: string;
  /** Its abbreviated commit hash. */
  readonly commit: string;
  /** The worktree's root: what BenchCluster.launch takes. */
  readonly root: string;
  /** Remove the worktree; idempotent. */
  dispose(): void;
}

/** Build `ref` of the repository at `repo`; throws a message that says which step failed. */
export function buildRef(repo: string, ref: string, log: (line: string) => void): RefBuild {
  let commit: string;
  try {
    commit = git(repo, ['rev-parse', '--verify', '--short', `${ref}^{commit}`]);
  } catch {
    throw new Error(`--abba ${ref}: not a commit of this repository`);
  }
  const root = mkdtempSync(join(tmpdir(), 'palisade-abba-'));
  const modules = join(root, 'node_modules');
  let disposed = false;
  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    // The link first: whatever removes the folder afterwards must not reach the real
    // node_modules through it.
    try {
      unlinkSync(modules);
    } catch {
      // not linked yet
    }
    try {
      git(repo, ['worktree', 'remove', '--force', root]);
    } catch {
      // not added yet, or already gone: the folder is removed below and the entry pruned
    }
    rmSync(root, { recursive: true, force: true });
    try {
      git(repo, ['worktree', 'prune']);
    } catch {
      // nothing to prune
    }
  };
  process.once('exit', dispose);
  try {
    log(`A: ${ref} (${commit}): git worktree in ${root}`);
    git(repo, ['worktree', 'add', '--detach', root, commit]);
    symlinkSync(join(repo, 'node_modules'), modules, 'dir');
    log(`A: npm run build (${ref} with this checkout's node_modules)`);
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) {
      const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
      throw new Error(`--abba ${ref} (${commit}) does not build: npm run build ${r.error ? `failed to start (${r.error.message})` : `exited with ${r.signal ?? r.status}`}\n${output}`);
    }
    if (!existsSync(cliOf(root))) throw new Error(`--abba ${ref} (${commit}) built, but has no ${cliOf(root).slice(root.length + 1)} to run`);
  } catch (e) {
    dispose();
    process.removeListener('exit', dispose);
    throw e;
  }
  return {
    ref,
    commit,
    root,
    dispose: () => {
      dispose();
      process.removeListener('exit', dispose);
    },
  };
}
