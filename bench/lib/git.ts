// git, run in a checkout, for the bench's bookkeeping (which commit was measured) and for
// building another commit (bench/ref-build.ts).
import { execFileSync } from 'node:child_process';

/** git's trimmed output; throws with git's own message when it fails. */
export function git(cwd: string, args: readonly string[]): string {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (e) {
    const stderr = (e as { stderr?: unknown }).stderr;
    const why = typeof stderr === 'string' && stderr.trim() ? stderr.trim() : e instanceof Error ? e.message : String(e);
    throw new Error(`git ${args.join(' ')}: ${why}`);
  }
}

/** The same, or null where an answer is only nice to have (no git, not a checkout). */
export function gitOrNull(cwd: string, args: readonly string[]): string | null {
  try {
    return git(cwd, args);
  } catch {
    return null;
  }
}
