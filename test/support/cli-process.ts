// One `palisade` CLI process against a cluster, its output collected, for the CLI tests.
import { spawn } from 'node:child_process';
import { CLI } from './node-process.js';

export interface CliRun {
  readonly p: ReturnType<typeof spawn>;
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>;
  output(): string;
  errors(): string;
}

/** `palisade SUB --endpoints E ...REST`: --endpoints goes right after the subcommand, since
 *  everything after `--` belongs to the command that `lock` or `elect` runs. */
export function palisadeAt(endpoints: readonly string[], args: readonly string[], env: NodeJS.ProcessEnv = {}): CliRun {
  const [sub, ...rest] = args;
  // A subcommand of a group (`session list`, `kv put`) takes --endpoints after its own name.
  const group = ['session', 'kv', 'member', 'config', 'snapshot'].includes(sub!) && rest.length > 0;
  const head = group ? [sub!, rest.shift()!] : [sub!];
  const p = spawn(process.execPath, [CLI, ...head, '--endpoints', endpoints.join(','), ...rest], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  p.stdout!.on('data', (d) => (out += d));
  p.stderr!.on('data', (d) => (err += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>((r) =>
    p.on('exit', (code, signal) => r({ code, signal, out, err })),
  );
  return { p, done, output: () => out, errors: () => err };
}

/** `palisade ...ARGS` run to its end (killed after `timeoutMs`, which then shows as a signal). */
export function runPalisade(args: readonly string[], timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }> {
  const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    }),
  );
}
