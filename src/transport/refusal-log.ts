// Logging what the node refuses without letting the refused write the log. Anyone who can
// reach a port can make the node refuse something (a wrong token, a wrong-MAC handshake, a
// browser's Origin); one line per refusal let 20,000 requests add 4 MB to a node's log. So
// each kind of refusal is logged through one RefusalLog:
//   - the first refusal from an address is logged in full (what was refused and why);
//   - the rest from that address are counted, and once per window (10 s) one line sums
//     them up: "1,832 refused handshakes from 127.0.0.1 in the last 10 s"; an address that
//     keeps being refused gets only that summary, window after window;
//   - at most MAX_ADDRESSES_PER_WINDOW addresses are logged in full per window; refusals
//     from further addresses (a flood from many addresses) are counted into one line.
// So one kind of refusal writes at most 2 × MAX_ADDRESSES_PER_WINDOW + 1 lines per window,
// whoever sends what, and the set of kinds is fixed by the code.
import type { Logger } from 'pino';

export const REFUSAL_WINDOW_MS = 10_000;
/** Addresses logged in full per window and kind of refusal. */
export const MAX_ADDRESSES_PER_WINDOW = 10;
/** Addresses remembered per window (beyond it new ones are only counted). */
const MAX_TRACKED = 10_000;

export type RefusalLevel = 'info' | 'warn';

/** Where the window's timer comes from: the process's timers, or a node's clock (a simulated
 *  node's timers must be its virtual clock's, so that a seed replays its run). */
export interface RefusalTimers {
  setInterval(fn: () => void, ms: number): RefusalTimer;
  clear(timer: RefusalTimer): void;
}
type RefusalTimer = { unref?(): unknown };

const PROCESS_TIMERS: RefusalTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clear: (timer) => clearInterval(timer as ReturnType<typeof setInterval>),
};

export interface RefusalLogOptions {
  readonly windowMs?: number;
  readonly level?: RefusalLevel;
  readonly timers?: RefusalTimers;
}

interface AddressCount {
  readonly address: string;
  readonly kind: string;
  /** Refusals in the current window. */
  count: number;
  /** Whether this address was logged in full (or summed up) in an earlier window: it
   *  gets the summary only. */
  known: boolean;
}

export class RefusalLog {
  private readonly windowMs: number;
  private readonly level: RefusalLevel;
  private byAddress = new Map<string, AddressCount>();
  private loggedInFull = 0;
  private overflowCount = 0;
  private readonly overflowAddresses = new Set<string>();
  private readonly timers: RefusalTimers;
  private timer: RefusalTimer | null = null;
  /** Lines written so far (for tests and metrics). */
  lines = 0;
  /** Refusals counted so far. */
  refusals = 0;

  /**
   * `what` names the refusals in the summary lines, in the plural ("refused peer
   * handshakes"); `message` is the full line's message.
   */
  constructor(
    private readonly log: Logger,
    private readonly message: string,
    private readonly what: string,
    options: RefusalLogOptions = {},
  ) {
    this.windowMs = options.windowMs ?? REFUSAL_WINDOW_MS;
    this.level = options.level ?? 'warn';
    this.timers = options.timers ?? PROCESS_TIMERS;
  }

  /**
   * One refusal of something `address` sent; `details` go into its full line (never a
   * secret). `kind` (one of a fixed set the caller defines, e.g. "wrong secret") keeps
   * refusals of different kinds from one address apart: each gets its first full line.
   */
  refuse(address: string, details: Readonly<Record<string, unknown>> = {}, kind = ''): void {
    this.refusals += 1;
    this.arm();
    const key = kind === '' ? address : `${address}\u0000${kind}`;
    let a = this.byAddress.get(key);
    if (a) {
      a.count += 1;
      return;
    }
    if (this.byAddress.size >= MAX_TRACKED || this.loggedInFull >= MAX_ADDRESSES_PER_WINDOW) {
      this.overflowCount += 1;
      if (this.overflowAddresses.size < MAX_TRACKED) this.overflowAddresses.add(address);
      return;
    }
    a = { count: 1, known: false, address, kind };
    this.byAddress.set(key, a);
    this.loggedInFull += 1;
    this.write({ remote: address, ...details }, this.message);
  }

  /** Write the window's summaries now and stop the timer (the node is stopping). */
  close(): void {
    this.flush();
    if (this.timer) this.timers.clear(this.timer);
    this.timer = null;
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = this.timers.setInterval(() => this.flush(), this.windowMs);
    this.timer.unref?.();
  }

  /** End of a window: sum up what was counted, and forget the quiet addresses. */
  private flush(): void {
    const seconds = Math.round(this.windowMs / 1000);
    const next = new Map<string, AddressCount>();
    for (const [key, a] of this.byAddress) {
      // The full line said the first; a summary says how many in all, when there were more.
      if (a.count > 1 || (a.known && a.count > 0)) {
        const kind = a.kind === '' ? '' : ` (${a.kind})`;
        this.write({ remote: a.address, count: a.count, windowMs: this.windowMs, ...(a.kind ? { kind: a.kind } : {}) }, `${fmt(a.count)} ${this.what}${kind} from ${a.address} in the last ${seconds} s`);
      }
      // An address refused in this window keeps being known (the next window sums it up
      // without a full line); a quiet one is forgotten.
      if (a.count > 0) next.set(key, { address: a.address, kind: a.kind, count: 0, known: true });
    }
    if (this.overflowCount > 0) {
      const n = this.overflowAddresses.size;
      this.write(
        { count: this.overflowCount, addresses: n, windowMs: this.windowMs },
        `${fmt(this.overflowCount)} ${this.what} from ${fmt(n)}${n >= MAX_TRACKED ? '+' : ''} other address${n === 1 ? '' : 'es'} in the last ${seconds} s`,
      );
    }
    this.byAddress = next;
    this.loggedInFull = 0;
    this.overflowCount = 0;
    this.overflowAddresses.clear();
    if (next.size === 0 && this.timer) {
      this.timers.clear(this.timer);
      this.timer = null;
    }
  }

  private write(fields: Record<string, unknown>, message: string): void {
    this.lines += 1;
    if (this.level === 'warn') this.log.warn(fields, message);
    else this.log.info(fields, message);
  }
}

/** 1832 -> "1,832". */
function fmt(n: number): string {
  return n.toLocaleString('en-US');
}
