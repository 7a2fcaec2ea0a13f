// A child process run to its end with its stdout and stderr interleaved into one text, for
// tests that run another language's test suite or runner and assert on what it printed.
import { spawn } from 'node:child_process';

export interface Captured {
  readonly code: number | null;
  readonly out: string;
}

export async function captured(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Captured> {
  const p = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => p.on('exit', r));
  return { code, out };
}
