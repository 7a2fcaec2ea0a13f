// What the product promises, checked over the history of one simulated run (true time is the
// scheduler's; every client records what it asked, what it was answered and when):
//  - a grant's token is above every grant of that lock that completed before it was asked;
//  - no two holders of an exclusive lock believe they hold it at the same time: a hold lasts,
//    in the holder's belief, from its grant to its last use, and a holder uses the lock only
//    while `lock.held` (its safe deadline, the design's lease rule) says so;
//  - the lease rule: the cluster never ends a session before the client's safe deadline;
//  - no acknowledged write is lost: at the end each key holds the last acknowledged write or
//    a later one;
//  - a LockTimeoutError leaves nothing held or queued (checked against the cluster at the end);
//  - a request is answered by its own command: the SDK raises no protocol error (an answer of
//    another op, a malformed result) for the well-formed requests the workload sends.

export interface Grant {
  readonly client: string;
  readonly lock: string;
  readonly token: number;
  readonly askedAt: number;
  readonly grantedAt: number;
  lastUse: number;
}

export interface Write {
  readonly key: string;
  readonly value: string;
  readonly revision: number;
  readonly askedAt: number;
  readonly ackAt: number;
}

export interface Timeout {
  readonly client: string;
  readonly session: number | null;
  readonly lock: string;
  readonly at: number;
}

/** Errors that a well-formed request under faults may meet; anything else is a bug. */
const EXPECTED = /Unavailable|Timeout|SessionExpired|LockLost|Fenced|ClientClosed|InDoubt|LIMIT_EXCEEDED|sessions are open|LockTimeout|Conflict|NotHolder|aborted|closed/;

export class History {
  readonly grants: Grant[] = [];
  readonly writes: Write[] = [];
  readonly timeouts: Timeout[] = [];
  useCount = 0;
  private readonly unexpected: string[] = [];
  private readonly early: string[] = [];

  constructor(private readonly now: () => number) {}

  granted(client: string, lock: string, token: number, askedAt: number): Grant {
    const g: Grant = { client, lock, token, askedAt, grantedAt: this.now(), lastUse: this.now() };
    this.grants.push(g);
    return g;
  }

  used(g: Grant): void {
    g.lastUse = this.now();
    this.useCount++;
  }

  wrote(key: string, value: string, revision: number, askedAt: number): void {
    this.writes.push({ key, value, revision, askedAt, ackAt: this.now() });
  }

  timedOut(client: string, session: number | null, lock: string, askedAt: number): void {
    this.timeouts.push({ client, session, lock, at: askedAt });
  }

  error(client: string, e: unknown): void {
    // The protocol's code when it has one (LIMIT_EXCEEDED says more than its message).
    const code = e instanceof Error && 'code' in e && typeof e.code === 'string' ? ` ${e.code}` : '';
    const text = e instanceof Error ? `${e.name}${code}: ${e.message}` : String(e);
    if (!EXPECTED.test(text)) this.unexpected.push(`${client} at ${this.now().toFixed(1)} ms: ${text}`);
  }

  /** The cluster ended `client`'s session while the client's safe deadline still held. */
  expiredEarly(client: string, session: number, safeDeadline: number): void {
    this.early.push(`the lease rule broken: ${client}'s session ${session} expired at ${this.now().toFixed(1)} ms, before its safe deadline ${safeDeadline.toFixed(1)} ms`);
  }

  acquiredAgain(t: Timeout): boolean {
    return this.grants.some((g) => g.client === t.client && g.lock === t.lock && g.askedAt > t.at);
  }

  /** The final value of `key` against the acknowledged writes; a problem, or null. */
  checkFinalValue(key: string, got: { value: string; revision: number } | null): string | null {
    const acked = this.writes.filter((w) => w.key === key);
    const last = acked.reduce((a, w) => (w.revision > a.revision ? w : a));
    if (got === null) return `acknowledged write lost: ${key} is absent, but ${JSON.stringify(last.value)} was acknowledged at revision ${last.revision}`;
    if (got.revision < last.revision) return `acknowledged write lost: ${key} is at revision ${got.revision}, below the acknowledged ${last.revision}`;
    if (got.revision === last.revision && got.value !== last.value) return `${key} at revision ${got.revision} holds ${JSON.stringify(got.value)}, not the acknowledged ${JSON.stringify(last.value)}`;
    return null;
  }

  violation(): string | null {
    if (this.unexpected.length > 0) return `unexpected error: ${this.unexpected[0]}`;
    if (this.early.length > 0) return this.early[0]!;
    const byLock = new Map<string, Grant[]>();
    for (const g of this.grants) byLock.set(g.lock, [...(byLock.get(g.lock) ?? []), g]);
    for (const [lock, gs] of byLock) {
      for (const a of gs) {
        for (const b of gs) {
          if (a === b) continue;
          if (a.grantedAt < b.askedAt && a.token >= b.token) {
            return `token order on ${lock}: ${a.client} was granted token ${a.token} at ${a.grantedAt.toFixed(1)} ms, before ${b.client} asked (${b.askedAt.toFixed(1)} ms) and got ${b.token}`;
          }
          if (a.client !== b.client && a.token === b.token) return `two holders with one token: ${a.client} and ${b.client} both hold ${lock} with ${a.token}`;
          // Belief windows [grantedAt, lastUse]: two holders believing at once.
          if (a.client !== b.client && a.grantedAt <= b.grantedAt && b.grantedAt <= a.lastUse) {
            return `two holders of ${lock} at once: ${a.client} (token ${a.token}) held it from ${a.grantedAt.toFixed(1)} to ${a.lastUse.toFixed(1)} ms, and ${b.client} was granted token ${b.token} at ${b.grantedAt.toFixed(1)} ms`;
          }
        }
      }
    }
    return null;
  }
}
