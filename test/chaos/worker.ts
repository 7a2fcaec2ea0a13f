// A chaos client process. The harness spawns it (`node --import tsx test/chaos/worker.ts`)
// with an IPC channel, so that SIGSTOP really freezes a client: its lease timers, its
// sockets and its late writes to the fenced registers, which live in the harness.
import { ClientWorkload, type WorkerIo } from './workload.js';
import { absoluteNowMs, runClock, type FencedWriteResult, type HarnessToWorker, type WorkerConfig, type WorkerToHarness } from './protocol.js';

if (typeof process.send !== 'function') {
  process.stderr.write('test/chaos/worker.ts is started by the chaos harness (it needs an IPC channel)\n');
  process.exit(2);
}

function send(message: WorkerToHarness): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, undefined, () => resolve());
  });
}

const writes = new Map<number, (result: FencedWriteResult) => void>();
let nextWrite = 0;
let workload: ClientWorkload | null = null;

function ioFor(config: WorkerConfig): WorkerIo {
  const now = runClock(config.originAbsMs);
  return {
    now,
    invoke: (invocation) => void send({ type: 'invoke', invocation }),
    complete: (id, outcome, completeMs, extra) => void send({ type: 'complete', id, outcome, completeMs, ...extra }),
    fencedWrite: (lock, token, value) =>
      new Promise<FencedWriteResult>((resolve) => {
        const request = ++nextWrite;
        writes.set(request, resolve);
        void send({ type: 'fencedWrite', request, lock, token, value });
      }),
    sessionOpened: (session, atMs) => void send({ type: 'sessionOpened', session, atMs }),
    sessionEnded: (session, expiryFromMs, why) => void send({ type: 'sessionEnded', session, expiryFromMs, why }),
    holding: (lock) => void send({ type: 'holding', lock }),
    note: (text) => void send({ type: 'note', atMs: now(), text }),
  };
}

async function start(config: WorkerConfig): Promise<void> {
  workload = new ClientWorkload(config, ioFor(config));
  await send({ type: 'ready' });
  try {
    await workload.run();
  } catch (e) {
    await send({ type: 'note', atMs: runClock(config.originAbsMs)(), text: `worker crashed: ${(e as Error).stack ?? String(e)}` });
    process.exitCode = 1;
  }
  await send({ type: 'stopped' });
  process.disconnect();
}

process.on('message', (message: HarnessToWorker) => {
  switch (message.type) {
    case 'clockProbe':
      void send({ type: 'clockReply', probe: message.probe, absMs: absoluteNowMs() });
      return;
    case 'start':
      void start(message.config);
      return;
    case 'stop':
      workload?.stop();
      return;
    case 'fencedWriteResult': {
      const resolve = writes.get(message.request);
      writes.delete(message.request);
      resolve?.(message.result);
      return;
    }
  }
});

void send({ type: 'boot' });

// The harness went away: nobody is recording any more.
process.on('disconnect', () => {
  if (workload === null) process.exit(0);
  workload.stop();
  setTimeout(() => process.exit(0), 5_000).unref();
});
