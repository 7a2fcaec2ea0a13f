// The orchestrator's side of a client process: fork bench/worker.ts under tsx, hand it a
// workload, relay its log lines, and collect its figures.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { FromWorker, ToWorker, WorkloadResult, WorkloadSpec } from './lib/messages.js';

const WORKER = join(import.meta.dirname, 'worker.ts');

export class WorkerHost {
  private readonly child: ChildProcess;
  private readonly done: Promise<WorkloadResult>;
  private readonly listeners = new Set<(m: FromWorker) => void>();

  constructor(spec: WorkloadSpec, log: (line: string) => void) {
    this.child = fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.done = new Promise((resolve, reject) => {
      let settled = false;
      this.child.on('message', (m: FromWorker) => {
        if (m.type === 'log') log(m.line);
        else if (m.type === 'result') {
          settled = true;
          resolve(m.result);
        } else if (m.type === 'failed') {
          settled = true;
          reject(new Error(`client process: ${m.error}`));
        }
        for (const l of this.listeners) l(m);
      });
      this.child.on('exit', (code, signal) => {
        if (!settled) reject(new Error(`client process exited (${signal ?? code}) without a result`));
      });
    });
    this.send({ type: 'run', spec });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  send(m: ToWorker): void {
    this.child.send(m);
  }

  /** The next message of `type` from the client process. */
  next<T extends FromWorker['type']>(type: T, timeoutMs = 120_000): Promise<Extract<FromWorker, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(l);
        reject(new Error(`client process sent no ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      const l = (m: FromWorker): void => {
        if (m.type !== type) return;
        clearTimeout(timer);
        this.listeners.delete(l);
        resolve(m as Extract<FromWorker, { type: T }>);
      };
      this.listeners.add(l);
      void this.done.catch((e: unknown) => {
        clearTimeout(timer);
        this.listeners.delete(l);
        reject(e instanceof Error ? e : new Error(String(e)));
      });
    });
  }

  result(): Promise<WorkloadResult> {
    return this.done;
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}
