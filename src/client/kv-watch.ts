// Watches of the key-value space that resume: each stream knows the revision up to which it
// has delivered every change (`revision`), and after a reconnect (another node, a leader
// change, a node killed mid-stream) asks the cluster for every change after it from the
// replicated watch history (lockfsm/history.ts). So a stream yields each change exactly once,
// in revision order, with no gap; when the history no longer reaches back that far the
// stream ends with CompactedError (definite: changes were missed) rather than go on with a gap.
//
// How the answers and the pushed events fit together. A node subscribes the connection to
// the prefix before it reads (so nothing is lost between), which means events may arrive
// before the answer to the request that subscribed, and some of them are in that answer
// too. So a stream holds the events it gets while its request is out, applies the answer
// first (its `revision` says what it covers), then the held events, and drops whatever it
// has already delivered: a change is new when its revision is above the stream's, or equal
// to it for a key not yet delivered at that revision (one entry, a txn or a session's end,
// may change several keys at one revision).
//
// Nodes of the release before revisions answer a watch with the entries alone: against
// them a stream falls back to re-reading the prefix after a reconnect (deletions it infers
// then carry revision 0), as that release's SDK did.
import type { KvEntry, ServerEvent } from '../protocol/client-protocol.js';
import type { ResultOf } from '../protocol/ops.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { CompactedError, InvalidArgumentError, PalisadeError } from './errors.js';
import { AsyncQueue } from './queue.js';

/** One change under a watched prefix; value null means deleted. */
export interface KvChange {
  readonly key: string;
  readonly value: Uint8Array | null;
  /** The index of the entry that made the change (0 only for a deletion inferred while
   *  re-reading the prefix against a node of the release before revisions). */
  readonly revision: number;
}

export interface WatchOptions {
  /** Yield the keys that exist when the watch starts (as changes) before later changes. */
  readonly includeExisting?: boolean;
  /** Start after this revision instead (a stream's `revision`, kept from an earlier run):
   *  every change since, then live ones; CompactedError when the history no longer has them. */
  readonly fromRevision?: number;
}

/** A live stream of changes under one prefix. `for await` it; leaving the loop stops it. */
export interface KvWatch extends AsyncIterableIterator<KvChange> {
  /** Resolves once the cluster has the subscription (changes from then on are seen). */
  readonly ready: Promise<void>;
  /** The revision up to which every change has been yielded or queued (null before ready). */
  readonly revision: number | null;
  close(): void;
}

/** Entries a node returns for a watch's first read. */
const WATCH_PAGE = 1000;

/** How soon a resume that got no answer is tried again. */
const RESUME_RETRY_MS = 1_000;

type State = 'starting' | 'resuming' | 'live';

class WatchStream {
  readonly queue: AsyncQueue<KvChange>;
  /** Every change up to this revision has been queued; null before the first answer. */
  position: number | null;
  /** Keys queued at `position` (the rest of that revision may still come), or null when
   *  every change of `position` is (an answer covered it whole). */
  private atPosition: Set<string> | null = null;
  private state: State = 'starting';
  /** Events that came while a request was out: applied after its answer. */
  private held: KvChange[] = [];
  /** The attempt in flight: a reconnect starts another, and the older one's answer is ignored. */
  private attempt = 0;
  /** Against a node of the release before revisions: the revision last seen per key. */
  private legacy: Map<string, number> | null = null;
  private readonly ready: { resolve: () => void; reject: (e: unknown) => void; promise: Promise<void> };

  constructor(
    private readonly core: ClientCore,
    readonly prefix: string,
    private readonly includeExisting: boolean,
    fromRevision: number | undefined,
    onClose: () => void,
  ) {
    this.queue = new AsyncQueue<KvChange>(onClose);
    this.position = fromRevision ?? null;
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    promise.catch(() => {}); // a caller that never awaits `ready` sees the error in the iteration
    this.ready = { resolve, reject, promise };
  }

  get whenReady(): Promise<void> {
    return this.ready.promise;
  }

  onEvent(change: KvChange): void {
    if (this.state === 'live') this.offer(change);
    else this.held.push(change);
  }

  /** Subscribes (first time) or resumes (after a reconnect) on the current connection. */
  async subscribe(): Promise<void> {
    if (this.queue.closed) return;
    const attempt = ++this.attempt;
    if (this.state === 'live') this.state = 'resuming';
    try {
      if (this.position === null) await this.start(attempt);
      else await this.resume(attempt);
    } catch (e) {
      if (attempt !== this.attempt || this.queue.closed) return;
      if (e instanceof CompactedError || this.state === 'starting') {
        this.ready.reject(e);
        this.queue.end(e);
        return;
      }
      // Not answered in time (the cluster is electing, or has no quorum): try again, from the
      // same revision, until the cluster answers or a reconnect starts another attempt.
      this.core.clock.setTimeout(() => {
        if (attempt === this.attempt) void this.subscribe().catch(() => {});
      }, RESUME_RETRY_MS);
    }
  }

  private async start(attempt: number): Promise<void> {
    const result = await this.call({ op: 'watch', prefix: this.prefix, snapshot: true });
    if (attempt !== this.attempt) return;
    if (isEntries(result)) return this.legacyResync(result);
    if (!('entries' in result)) throw new PalisadeError('INTERNAL', 'a watch with snapshot was answered with changes');
    const snap = result;
    if (this.includeExisting) for (const e of snap.entries) this.queue.push({ key: e.key, value: e.value, revision: e.revision });
    this.coveredThrough(snap.revision);
    this.goLive();
  }

  private async resume(attempt: number): Promise<void> {
    for (;;) {
      // A revision only partly delivered (its entry changed several keys and the connection
      // broke in between) is asked for again; what of it was delivered is dropped in offer.
      const from = this.atPosition === null ? this.position! : this.position! - 1;
      const result = await this.call({ op: 'watch', prefix: this.prefix, fromRevision: from });
      if (attempt !== this.attempt) return;
      if (isEntries(result)) return this.legacyResync(result);
      if (!('changes' in result)) throw new PalisadeError('INTERNAL', 'a watch from a revision was answered with a snapshot');
      const page = result;
      for (const c of page.changes) this.offer(c);
      // Every change up to the page's revision is in it (a page ends between revisions).
      this.coveredThrough(page.revision);
      if (!page.more) break;
    }
    this.goLive();
  }

  private goLive(): void {
    this.state = 'live';
    const held = this.held;
    this.held = [];
    for (const c of held) this.offer(c);
    this.ready.resolve();
  }

  /** Queues `change` unless it was queued already (see the head of this file). */
  private offer(change: KvChange): void {
    if (this.legacy !== null) return this.legacyOffer(change);
    const at = this.position ?? 0;
    if (change.revision < at || (change.revision === at && (this.atPosition === null || this.atPosition.has(change.key)))) return;
    if (change.revision > at) {
      this.position = change.revision;
      this.atPosition = new Set();
    }
    this.atPosition!.add(change.key);
    this.queue.push(change);
  }

  /** An answer covered every change up to `revision`. */
  private coveredThrough(revision: number): void {
    if (this.position !== null && revision < this.position) return;
    this.position = revision;
    this.atPosition = null;
  }

  private call(body: { op: 'watch'; prefix: string; snapshot?: boolean; fromRevision?: number }): Promise<ResultOf<'watch'>> {
    return this.core.link.call(() => body, { deadline: defaultDeadline(this.core) });
  }

  // ---- a node of the release before revisions ----------------------------------------------

  /** The prefix's entries as such a node read them: the first read is the baseline, later
   *  ones fill in what the stream missed while disconnected. */
  private legacyResync(entries: readonly KvEntry[]): void {
    const first = this.legacy === null;
    const known = (this.legacy ??= new Map());
    const present = new Set<string>();
    for (const e of entries) {
      present.add(e.key);
      if (first && !this.includeExisting) {
        if ((known.get(e.key) ?? 0) < e.revision) known.set(e.key, e.revision);
      } else {
        this.legacyOffer({ key: e.key, value: e.value, revision: e.revision });
      }
    }
    // A node answers with at most a page of entries; with a full page, absence proves nothing.
    if (!first && entries.length < WATCH_PAGE) {
      for (const [key, revision] of known) {
        if (revision > 0 && !present.has(key)) {
          known.set(key, 0);
          this.queue.push({ key, value: null, revision: 0 });
        }
      }
    }
    this.goLive();
  }

  private legacyOffer(change: KvChange): void {
    const known = this.legacy!;
    const seen = known.get(change.key);
    if (seen !== undefined && change.revision <= seen) return;
    known.set(change.key, change.revision);
    this.queue.push(change);
  }
}

/** Every watch of the client, by prefix: one server subscription per prefix and connection. */
export class WatchHub {
  private readonly byPrefix = new Map<string, Set<WatchStream>>();

  constructor(private readonly core: ClientCore) {}

  watch(prefix: string, options: WatchOptions = {}): KvWatch {
    if (typeof prefix !== 'string') throw new InvalidArgumentError('prefix must be a string');
    const from = options.fromRevision;
    if (from !== undefined && !(Number.isSafeInteger(from) && from >= 0)) throw new InvalidArgumentError('fromRevision must be a non-negative integer');
    let streams = this.byPrefix.get(prefix);
    if (!streams) this.byPrefix.set(prefix, (streams = new Set()));
    const stream: WatchStream = new WatchStream(this.core, prefix, options.includeExisting === true, from, () => this.unsubscribe(stream));
    streams.add(stream);
    stream.subscribe().catch(() => {
      // A failure other than a definite one: the next reconnect subscribes again.
    });
    const { queue } = stream;
    // defineProperties, not Object.assign: assign would copy the revision once, not read it.
    return Object.defineProperties(queue, {
      ready: { value: stream.whenReady },
      close: { value: () => void queue.return() },
      revision: { get: () => stream.position },
    }) as AsyncQueue<KvChange> & KvWatch;
  }

  handleEvent(e: Extract<ServerEvent, { event: 'kvChanged' }>): void {
    for (const [prefix, streams] of this.byPrefix) {
      if (!e.key.startsWith(prefix)) continue;
      for (const s of streams) s.onEvent({ key: e.key, value: e.value, revision: e.revision });
    }
  }

  /** A new connection carries no subscriptions: renew them, resuming each stream from its revision. */
  resubscribeAll(): void {
    for (const streams of this.byPrefix.values()) {
      for (const s of streams) {
        s.subscribe().catch(() => {
          // The next reconnect tries again.
        });
      }
    }
  }

  /** Ends every stream (the client is closing): readers see the end of the iteration. */
  endAll(): void {
    const all = [...this.byPrefix.values()].flatMap((streams) => [...streams]);
    this.byPrefix.clear();
    for (const s of all) s.queue.end();
  }

  private unsubscribe(stream: WatchStream): void {
    const streams = this.byPrefix.get(stream.prefix);
    if (!streams?.delete(stream) || streams.size > 0) return;
    this.byPrefix.delete(stream.prefix);
    this.core.link.call(() => ({ op: 'unwatch', prefix: stream.prefix }), { deadline: defaultDeadline(this.core) }).catch(() => {});
  }
}

/** A plain watch's answer: what a node of the release before revisions gives every watch. */
function isEntries(result: ResultOf<'watch'>): result is readonly KvEntry[] {
  return Array.isArray(result);
}
