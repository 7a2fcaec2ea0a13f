// Ctrl-C and SIGTERM for the commands that open a session (lock, elect, get, leader, kv).
//
// Without a handler Node exits at once on SIGINT/SIGTERM, and the session stays on the
// cluster until its TTL runs out: a `palisade lock` still waiting in line would be granted
// the lock after its death and block everyone else until then. So from the moment a command
// starts connecting until it ends, a signal closes the session (the cluster drops its waits,
// releases its locks and resigns its elections) and then exits 130 (SIGINT) or 143 (SIGTERM).
// While a command's child runs, or a watch is open, the signal goes to that phase's own
// handler instead (the child gets it; the watch ends), and the command ends as that phase does.

export interface Closeable {
  close(): Promise<void>;
}

/** 128 + the signal's number, as a shell reports a process ended by it. */
export const SIGNAL_EXIT: Readonly<Record<'SIGINT' | 'SIGTERM', number>> = { SIGINT: 130, SIGTERM: 143 };

/** How long closing the session may take before the command exits anyway. */
const CLOSE_BOUND_MS = 5_000;

let current: Interrupts | null = null;
let ending = false;

/** True once a signal has begun ending the command: its own exit code no longer counts. */
export function interrupted(): boolean {
  return ending;
}

export class Interrupts {
  private client: Promise<Closeable | undefined> = Promise.resolve(undefined);
  private delegate: ((sig: NodeJS.Signals) => void) | null = null;
  private readonly onInt = (): void => this.signal('SIGINT');
  private readonly onTerm = (): void => this.signal('SIGTERM');

  private constructor() {
    process.on('SIGINT', this.onInt);
    process.on('SIGTERM', this.onTerm);
  }

  /** Installed before the command connects; one per process (one command runs per process). */
  static install(): Interrupts {
    current?.dispose();
    current = new Interrupts();
    return current;
  }

  /** The client being connected: once it is, a signal closes it. Returns `connecting`. */
  session<C extends Closeable>(connecting: Promise<C>): Promise<C> {
    this.client = connecting.then(
      (c) => c,
      () => undefined,
    );
    return connecting;
  }

  /** While set, a signal is handed to `fn` (forwarded to a child, or ends a watch). */
  handOver(fn: ((sig: NodeJS.Signals) => void) | null): void {
    this.delegate = fn;
  }

  dispose(): void {
    process.off('SIGINT', this.onInt);
    process.off('SIGTERM', this.onTerm);
    if (current === this) current = null;
  }

  private signal(sig: 'SIGINT' | 'SIGTERM'): void {
    if (this.delegate && !ending) {
      this.delegate(sig);
      return;
    }
    // A second Ctrl-C while the session closes: the user does not want to wait.
    if (ending) process.exit(SIGNAL_EXIT[sig]);
    ending = true;
    process.stderr.write(`palisade: ${sig}: closing the session\n`);
    const bound = new Promise<void>((r) => setTimeout(r, CLOSE_BOUND_MS));
    const closed = this.client.then((c) => c?.close()).catch(() => {});
    void Promise.race([closed, bound]).then(() => process.exit(SIGNAL_EXIT[sig]));
  }
}
