// Leader election on the lock table: campaign queues this client's session as a candidate
// (FIFO); the leader's token is its epoch, usable as a fencing token. Observing keeps one
// server subscription per election and folds events and reads into one ordered state.
import type { ElectionLeader, ServerEvent } from '../protocol/client-protocol.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { isRecord } from '../protocol/results.js';
import {
  ClientClosedError,
  ConflictError,
  FencedError,
  InvalidArgumentError,
  NotHolderError,
  SessionExpiredError,
  TimeoutError,
  TokenRegressionError,
} from './errors.js';
import { AsyncQueue } from './queue.js';
import type { Session } from './session.js';
import { LocalTurns } from './turns.js';
import { LeaseHandle } from './handle.js';

/** Who leads an election: the leading session, its proclaimed value and its token (epoch). */
export interface ElectionState {
  readonly leader: number | null;
  readonly value: string | null;
  readonly token: number | null;
}

export interface CampaignOptions {
  /** Abort to stop campaigning (rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

/** A stream of leadership changes: the current state first, then each change in order. */
export interface ElectionObserver extends AsyncIterableIterator<ElectionState> {
  /** Resolves once the subscription is in place and the current state read. */
  readonly ready: Promise<void>;
  close(): void;
}

/** `index` is the event's log index, or null for a state read from a node (always current);
 *  `url` the node that told it. */
type StateListener = (state: ElectionState, index: number | null, url: string) => void;

/** One server subscription to an election, shared by observers, campaigns and leaderships. */
class ElectionWatch {
  readonly name: string;
  state: ElectionState | null = null;
  /** The node that told `state`. */
  source = '';
  refs = 0;
  private lastIndex = 0;
  private readonly listeners = new Set<StateListener>();

  constructor(name: string) {
    this.name = name;
  }

  listen(listener: StateListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  applyEvent(state: ElectionState, index: number, url: string): void {
    // Events reach a client once per node it has been connected to: keep each index once.
    if (index <= this.lastIndex) return;
    this.lastIndex = index;
    this.set(state, index, url);
  }

  /**
   * A state a node read at least as late as every event it sent before the answer (events
   * and answers share one ordered connection), so it supersedes them.
   */
  applyRead(state: ElectionState, url: string): void {
    this.set(state, null, url);
  }

  private set(state: ElectionState, index: number | null, url: string): void {
    this.state = state;
    this.source = url;
    for (const listener of [...this.listeners]) listener(state, index, url);
  }
}

function sameState(a: ElectionState | null, b: ElectionState): boolean {
  return a !== null && a.leader === b.leader && a.value === b.value && a.token === b.token;
}

/** A won election. Its `token` (epoch) fences writes like a lock's. */
export class Leadership extends LeaseHandle {
  readonly election: string;
  /** The leader's epoch: the index of the entry that made this session leader. */
  readonly token: number;
  private currentValue: string;
  private resigning: Promise<void> | null = null;
  private unwatch: (() => void) | null;

  /** @internal Created by Election.campaign. */
  constructor(core: ClientCore, hub: ElectionHub, watch: ElectionWatch, session: Session, token: number, value: string) {
    super(core, session, watch.name);
    this.election = watch.name;
    this.token = token;
    this.currentValue = value;
    const unlisten = watch.listen((state, index) => {
      // Events up to our own election are history; later ones, and reads, are news.
      if (index !== null && index <= token) return;
      if (state.leader === session.id && state.token === token) return;
      // An event after our election is the cluster's word. A read may be older than our
      // election: an observe sent before the campaign was answered can be answered after it
      // (its read waits for the leader's confirmation; the campaign's commit may not), and
      // it reads as if we never led. So the cluster is asked again (a read sent now) before
      // the leadership is given up. Waiting is safe: while our session lives, only a resign
      // of ours ends the leadership, and the session's end is told on its own path
      // (sessionExpired, the safe deadline).
      if (index !== null) this.markLost('another leader took over');
      else void this.confirmLost(session);
    });
    this.unwatch = () => {
      unlisten();
      hub.release(watch);
    };
  }

  /** Gives the leadership up if a linearizable read says someone else leads; a read that
   *  fails decides nothing (the next event or read, or the session's end, will). */
  private async confirmLost(session: Session): Promise<void> {
    if (this.signal.aborted) return;
    let state: ElectionLeader;
    try {
      state = await this.core.link.call(() => ({ op: 'leader', election: this.election }), { deadline: defaultDeadline(this.core), signal: session.signal });
    } catch {
      return;
    }
    if (state.leader !== session.id || state.token !== this.token) this.markLost('another leader took over');
  }

  /** The value this leader last proclaimed. */
  get value(): string {
    return this.currentValue;
  }

  /** Publishes a new value as the leader's; LockLostError if no longer leader. */
  async proclaim(value: string): Promise<void> {
    checkValue(value);
    this.assertHeld();
    try {
      await this.core.sessions.sequenced(
        () => ({ op: 'proclaim', election: this.election, token: this.token, value }),
        { session: this.session, deadline: defaultDeadline(this.core) },
      );
    } catch (e) {
      if (e instanceof NotHolderError || e instanceof FencedError || e instanceof ConflictError) {
        this.markLost('the cluster says this session no longer leads', e);
        throw this.lostError();
      }
      throw e;
    }
    this.currentValue = value;
  }

  /** Steps down. Idempotent; resolves once the cluster has a new leader (or none). */
  resign(): Promise<void> {
    this.resigning ??= this.doResign();
    return this.resigning;
  }

  protected onLost(): void {
    this.stopWatching();
  }

  private async doResign(): Promise<void> {
    const live = this.session.isLive;
    this.endByHolder('resigned');
    this.stopWatching();
    if (live) await resignByToken(this.core, this.session, this.election, this.token);
  }

  private stopWatching(): void {
    this.unwatch?.();
    this.unwatch = null;
  }
}

async function resignByToken(core: ClientCore, session: Session, election: string, token: number): Promise<void> {
  try {
    await core.sessions.sequenced(() => ({ op: 'resign', election, token }), { session, deadline: Infinity });
  } catch (e) {
    if (e instanceof NotHolderError || e instanceof ConflictError || e instanceof SessionExpiredError || e instanceof ClientClosedError) return;
    throw e;
  }
}

/** One election, as seen by one client. */
export class Election {
  readonly name: string;
  private readonly core: ClientCore;
  private readonly hub: ElectionHub;

  /** @internal Created by LockClient.election. */
  constructor(core: ClientCore, hub: ElectionHub, name: string) {
    if (typeof name !== 'string' || name === '') throw new InvalidArgumentError('election name must be a non-empty string');
    this.core = core;
    this.hub = hub;
    this.name = name;
  }

  /**
   * Stands this client's session as a candidate and resolves once it leads. Candidates are
   * served in the order they campaigned. A second campaign of the same client waits for the
   * first's leadership to end.
   */
  async campaign(value: string, options: CampaignOptions = {}): Promise<Leadership> {
    checkValue(value);
    const { signal } = options;
    const passTurn = await this.hub.turns.take(this.name, Infinity, this.core, signal);
    const watch = this.hub.retain(this.name);
    let handedOver = false;
    try {
      const session = await this.core.sessions.ensure(defaultDeadline(this.core), signal);
      // A leadership's token is a fencing token like a lock's: above the floor as it stood
      // when the campaign was first sent (token-floor.ts).
      const floor = this.core.floor.current;
      let queuedIndex = 0;
      let token: number;
      try {
        const result = await this.core.sessions.sequenced(() => ({ op: 'campaign', election: this.name, value }), {
          session,
          deadline: defaultDeadline(this.core),
          vet: (answer, url) => (isRecord(answer) && answer.status === 'leader' && typeof answer.token === 'number' ? this.core.floor.check(answer.token, floor, this.name, url) : null),
          ...(signal ? { signal } : {}),
        });
        if (result.status === 'leader') {
          token = result.token;
        } else {
          queuedIndex = result.index;
          const elected = await waitForLeadership(watch, session, queuedIndex, signal);
          const refused = this.core.floor.check(elected.token, floor, this.name, elected.url);
          if (refused) {
            this.core.link.distrust(elected.url, { kind: 'TOKEN_REGRESSION', url: elected.url, message: refused.message });
            throw refused;
          }
          token = elected.token;
        }
      } catch (e) {
        // Given up while queued (or with the campaign's outcome unknown, or told by a node
        // that is not the cluster): leave the queue, or step down if elected meanwhile, so no
        // leadership is held for nobody.
        if ((signal?.aborted || e instanceof TimeoutError || e instanceof TokenRegressionError) && session.isLive) {
          // A refused leadership is no news of the cluster's: its state is read instead.
          const settled = await this.withdraw(watch, session, queuedIndex, !(e instanceof TokenRegressionError));
          if (!settled) {
            handedOver = true;
            void this.resignWhenElected(watch, session, queuedIndex, passTurn);
          }
        }
        throw e;
      }
      const leadership = new Leadership(this.core, this.hub, watch, session, token, value);
      handedOver = true;
      leadership.signal.addEventListener('abort', passTurn, { once: true });
      if (!session.isLive) leadership.assertHeld();
      return leadership;
    } finally {
      if (!handedOver) {
        this.hub.release(watch);
        passTurn();
      }
    }
  }

  /** The current leader (linearizable read). */
  async leader(): Promise<ElectionState> {
    return stateOf(await this.core.link.call(() => ({ op: 'leader', election: this.name }), { deadline: defaultDeadline(this.core) }));
  }

  /** Streams the leader: the current one first, then every change in order. */
  observe(): ElectionObserver {
    const watch = this.hub.retain(this.name);
    let last: ElectionState | null = null;
    const offer = (state: ElectionState): void => {
      if (sameState(last, state)) return;
      last = state;
      queue.push(state);
    };
    const queue: AsyncQueue<ElectionState> = new AsyncQueue<ElectionState>(() => {
      unlisten();
      this.hub.observers.delete(queue);
      this.hub.release(watch);
    });
    this.hub.observers.add(queue);
    const unlisten = watch.listen((state) => offer(state));
    if (watch.state) offer(watch.state);
    const ready = this.hub.subscribed(watch).then(
      () => {
        if (watch.state) offer(watch.state);
      },
      (e: unknown) => {
        queue.end(e);
        throw e;
      },
    );
    ready.catch(() => {});
    return Object.assign(queue, { ready, close: () => void queue.return() });
  }

  /**
   * Withdraws a candidacy (resign without token). CONFLICT means we are no candidate: elected
   * meanwhile (then resign as leader) or never queued. False when the outcome is unknown.
   * `trustWatch`: whether the watch's state may be taken for the cluster's (not after a
   * leadership was refused below the floor: then the leader is read).
   */
  private async withdraw(watch: ElectionWatch, session: Session, queuedIndex: number, trustWatch: boolean): Promise<boolean> {
    try {
      await this.core.sessions.sequenced(() => ({ op: 'resign', election: this.name }), {
        session,
        deadline: defaultDeadline(this.core),
      });
      return true;
    } catch (e) {
      if (e instanceof SessionExpiredError || e instanceof ClientClosedError) return true;
      if (!(e instanceof ConflictError)) return false;
    }
    try {
      const state = trustWatch && watch.state !== null && watch.state.leader === session.id ? watch.state : await this.leader();
      if (state.leader === session.id && state.token !== null && state.token > queuedIndex) {
        await resignByToken(this.core, session, this.name, state.token);
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Fallback when a withdrawal's outcome is unknown: step down as soon as elected. */
  private async resignWhenElected(watch: ElectionWatch, session: Session, queuedIndex: number, passTurn: () => void): Promise<void> {
    try {
      const { token } = await waitForLeadership(watch, session, queuedIndex);
      await resignByToken(this.core, session, this.name, token);
    } catch {
      // The session ended: it left the queue with it.
    } finally {
      this.hub.release(watch);
      passTurn();
    }
  }
}

/** Resolves with our token, and the node that told it, once the watch shows this session
 *  leading by an entry after `queuedIndex`. */
function waitForLeadership(watch: ElectionWatch, session: Session, queuedIndex: number, signal?: AbortSignal): Promise<{ token: number; url: string }> {
  return new Promise<{ token: number; url: string }>((resolve, reject) => {
    const finish = (): void => {
      unlisten();
      signal?.removeEventListener('abort', onAbort);
      session.signal.removeEventListener('abort', onSessionEnd);
    };
    const check = (state: ElectionState, url: string): void => {
      // Our leadership's token is the entry that made us leader: after we queued.
      if (state.leader === session.id && state.token !== null && state.token > queuedIndex) {
        finish();
        resolve({ token: state.token, url });
      }
    };
    const onAbort = (): void => {
      finish();
      reject(signal?.reason);
    };
    const onSessionEnd = (): void => {
      finish();
      reject(session.signal.reason);
    };
    const unlisten = watch.listen((state, _index, url) => check(state, url));
    signal?.addEventListener('abort', onAbort, { once: true });
    session.signal.addEventListener('abort', onSessionEnd, { once: true });
    if (signal?.aborted) return onAbort();
    if (session.signal.aborted) return onSessionEnd();
    if (watch.state) check(watch.state, watch.source);
  });
}

/** Every election this client watches; one server subscription each. */
export class ElectionHub {
  readonly turns = new LocalTurns();
  /** Open observe() streams, ended when the client closes. */
  readonly observers = new Set<AsyncQueue<ElectionState>>();
  private readonly core: ClientCore;
  private readonly watches = new Map<string, ElectionWatch>();
  private readonly subscriptions = new Map<ElectionWatch, Promise<void>>();

  constructor(core: ClientCore) {
    this.core = core;
  }

  /** The watch of `name`, subscribed if it is new. Pair with release(). */
  retain(name: string): ElectionWatch {
    let watch = this.watches.get(name);
    if (!watch) {
      watch = new ElectionWatch(name);
      this.watches.set(name, watch);
      this.subscribe(watch);
    }
    watch.refs++;
    return watch;
  }

  release(watch: ElectionWatch): void {
    if (--watch.refs > 0 || this.watches.get(watch.name) !== watch) return;
    this.watches.delete(watch.name);
    this.subscriptions.delete(watch);
    this.core.link.call(() => ({ op: 'unobserve', election: watch.name }), { deadline: defaultDeadline(this.core) }).catch(() => {});
  }

  /** Resolves when the latest subscription of `watch` has been answered. */
  subscribed(watch: ElectionWatch): Promise<void> {
    return this.subscriptions.get(watch) ?? Promise.resolve();
  }

  /** An electionChanged event pushed by the node at `url`. */
  handleEvent(e: Extract<ServerEvent, { event: 'electionChanged' }>, url: string): void {
    this.watches.get(e.election)?.applyEvent({ leader: e.leader, value: e.value, token: e.token }, e.index, url);
  }

  /** A new connection carries no subscriptions: renew them; the answers re-read each state. */
  resubscribeAll(): void {
    for (const watch of this.watches.values()) this.subscribe(watch);
  }

  /** Ends every observer (the client is closing). */
  endAll(): void {
    for (const queue of [...this.observers]) queue.end();
  }

  private subscribe(watch: ElectionWatch): void {
    let url = '';
    const done = this.core.link
      .call(() => ({ op: 'observe', election: watch.name }), { deadline: defaultDeadline(this.core), answeredBy: (from) => (url = from) })
      .then((result) => {
        if (this.watches.get(watch.name) === watch) watch.applyRead(stateOf(result), url);
      });
    done.catch(() => {
      // The next reconnect subscribes again.
    });
    this.subscriptions.set(watch, done);
  }
}


/** The SDK's view of an election's state: the answer without the name the caller gave. */
function stateOf(answer: ElectionLeader): ElectionState {
  return { leader: answer.leader, value: answer.value, token: answer.token };
}

function checkValue(value: string): void {
  if (typeof value !== 'string') throw new InvalidArgumentError('an election value must be a string');
}
