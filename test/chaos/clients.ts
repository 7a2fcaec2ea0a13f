// The client processes of a run, seen from the harness: spawning them, measuring how far
// their clocks are from ours, routing what they report into the recorder and their writes
// into the fenced registers, pausing them for the nemesis, and stopping them at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ClientControl } from './nemesis.js';
import { absoluteNowMs, type HarnessToWorker, type WorkerConfig, type WorkerToHarness } from './protocol.js';
import type { HistoryRecorder } from './recorder.js';
import type { FencedResources } from './resources.js';

const WORKER = resolve(import.meta.dirname, 'worker.ts');
const BOOT_TIMEOUT_MS = 30_000;

interface Worker {
  readonly process: string;
  readonly child: ChildProcess;
  holding: string | null;
  paused: boolean;
  stopped: boolean;
  readonly exited: Promise<void>;
}

export interface FleetOptions {
  readonly count: number;
  readonly logDir: string;
  readonly recorder: HistoryRecorder;
  readonly resources: FencedResources;
  /** The run's clock (ms since originAbsMs). */
  readonly now: () => number;
}

export class ClientFleet implements ClientControl {
  private readonly workers: Worker[] = [];
  private readonly waiters = new Map<string, ((m: WorkerToHarness) => boolean)[]>();

  private constructor(private readonly options: FleetOptions) {}

  /** Spawns the processes and waits until each listens. */
  static async spawn(options: FleetOptions): Promise<ClientFleet> {
    const fleet = new ClientFleet(options);
    for (let i = 1; i <= options.count; i++) fleet.spawnOne(`w${i}`);
    try {
      await Promise.all(fleet.workers.map((w) => fleet.waitFor(w, (m) => m.type === 'boot', BOOT_TIMEOUT_MS, 'boot')));
    } catch (e) {
      fleet.killAll();
      throw e;
    }
    return fleet;
  }

  /**
   * The worst disagreement between a worker's clock and ours, in ms: each probe brackets
   * the worker's reading between our send and our receipt; the best of several probes per
   * worker bounds the offset.
   */
  async measureClockSkew(probes = 5): Promise<number> {
    let worst = 0;
    for (const w of this.workers) {
      let best = Infinity;
      for (let probe = 0; probe < probes; probe++) {
        const sent = absoluteNowMs();
        const reply = this.waitFor(w, (m) => m.type === 'clockReply' && m.probe === probe, 5_000, 'clock probe');
        this.send(w, { type: 'clockProbe', probe });
        const m = await reply;
        const received = absoluteNowMs();
        if (m.type !== 'clockReply') continue;
        best = Math.min(best, Math.max(0, sent - m.absMs, m.absMs - received));
      }
      worst = Math.max(worst, best);
    }
    return worst;
  }

  /** Starts every workload; `configFor` gives each its config. */
  async startAll(configFor: (process: string, index: number) => WorkerConfig): Promise<void> {
    await Promise.all(
      this.workers.map((w, i) => {
        const ready = this.waitFor(w, (m) => m.type === 'ready', 10_000, 'ready');
        this.send(w, { type: 'start', config: configFor(w.process, i) });
        return ready;
      }),
    );
  }

  clients(): { process: string; holding: string | null }[] {
    return this.workers.filter((w) => !w.paused && !w.stopped).map((w) => ({ process: w.process, holding: w.holding }));
  }

  pause(process: string): void {
    const w = this.worker(process);
    if (w.paused || w.child.exitCode !== null) return;
    w.child.kill('SIGSTOP');
    w.paused = true;
  }

  resume(process: string): void {
    const w = this.worker(process);
    if (!w.paused) return;
    w.paused = false;
    w.child.kill('SIGCONT');
  }

  resumeAll(): void {
    for (const w of this.workers) this.resume(w.process);
  }

  /**
   * Asks every worker to finish its action, let go and close; SIGKILLs the ones that do
   * not exit in time (their open operations stay unknown). Returns the ones killed.
   */
  async stopAll(timeoutMs: number): Promise<string[]> {
    this.resumeAll();
    for (const w of this.workers) if (w.child.connected) this.send(w, { type: 'stop' });
    const killed: string[] = [];
    await Promise.all(
      this.workers.map(async (w) => {
        const timer = setTimeout(() => {
          killed.push(w.process);
          w.child.kill('SIGKILL');
        }, timeoutMs);
        await w.exited;
        clearTimeout(timer);
      }),
    );
    return killed;
  }

  /** Kills whatever still runs (after a harness failure). */
  killAll(): void {
    for (const w of this.workers) {
      if (w.child.exitCode === null && w.child.signalCode === null) {
        w.child.kill('SIGCONT');
        w.child.kill('SIGKILL');
      }
    }
  }

  private spawnOne(process: string): void {
    const log = openSync(join(this.options.logDir, `${process}.log`), 'a');
    const child = spawn(globalThis.process.execPath, ['--import', 'tsx', WORKER], {
      stdio: ['ignore', log, log, 'ipc'],
      serialization: 'json',
    });
    closeSync(log);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const w: Worker = { process, child, holding: null, paused: false, stopped: false, exited };
    child.on('message', (m: WorkerToHarness) => this.handle(w, m));
    child.on('exit', (code, signal) => {
      w.stopped = true;
      if (code !== 0) this.options.recorder.note('harness', this.options.now(), `client ${process} exited (${signal ?? `code ${code}`})`);
    });
    this.workers.push(w);
  }

  private handle(w: Worker, m: WorkerToHarness): void {
    const { recorder, resources } = this.options;
    switch (m.type) {
      case 'invoke':
        recorder.invoke(m.invocation);
        break;
      case 'complete':
        recorder.complete(m);
        break;
      case 'fencedWrite':
        this.send(w, { type: 'fencedWriteResult', request: m.request, result: resources.write(m.lock, m.token, m.value) });
        break;
      case 'sessionOpened':
        recorder.sessionOpened(w.process, m.session, m.atMs);
        break;
      case 'sessionEnded':
        recorder.sessionEnded(w.process, m.session, m.expiryFromMs, m.why);
        break;
      case 'holding':
        w.holding = m.lock;
        break;
      case 'note':
        recorder.note(w.process, m.atMs, m.text);
        break;
      case 'stopped':
        w.stopped = true;
        break;
      case 'boot':
      case 'ready':
      case 'clockReply':
        break;
    }
    const waiting = this.waiters.get(w.process);
    if (waiting) this.waiters.set(w.process, waiting.filter((accept) => !accept(m)));
  }

  private waitFor(w: Worker, pred: (m: WorkerToHarness) => boolean, timeoutMs: number, what: string): Promise<WorkerToHarness> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`client ${w.process}: no ${what} within ${timeoutMs} ms`)), timeoutMs);
      const list = this.waiters.get(w.process) ?? [];
      list.push((m) => {
        if (!pred(m)) return false;
        clearTimeout(timer);
        resolve(m);
        return true;
      });
      this.waiters.set(w.process, list);
      void w.exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`client ${w.process} exited while the harness waited for ${what}`));
      });
    });
  }

  private send(w: Worker, message: HarnessToWorker): void {
    if (w.child.connected) w.child.send(message);
  }

  private worker(process: string): Worker {
    const w = this.workers.find((x) => x.process === process);
    if (!w) throw new Error(`no client ${process}`);
    return w;
  }
}
