import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Driver, TEST_CONFIG } from './driver.js';

describe('exclusive locks', () => {
  it('grants a free lock with the entry index as token', () => {
    const d = new Driver();
    const a = d.open();
    const r = d.acquire(a, 'db');
    assert.deepEqual(r.result, { type: 'granted', token: d.index, mode: 'exclusive' });
    assert.deepEqual(r.events, [{ type: 'granted', session: a, name: 'db', token: d.index, mode: 'exclusive' }]);
    assert.deepEqual(d.holders('db'), [[a, d.index, 'exclusive']]);
  });

  it('answers busy without waiting, and lists the holder', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'db').result);
    const r = d.acquire(b, 'db', { wait: false });
    assert.deepEqual(r.result, {
      type: 'busy',
      holders: [{ session: a, token: t, mode: 'exclusive' }],
      holderCount: 1,
      delayed: false,
    });
    assert.deepEqual(r.events, []);
    assert.deepEqual(d.waiters('db'), []);
  });

  it('queues waiters FIFO and hands the lock over on release with the release index as token', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    const ta = Driver.token(d.acquire(a, 'db').result);
    assert.deepEqual(d.acquire(b, 'db').result, { type: 'queued', position: 1 });
    assert.deepEqual(d.acquire(c, 'db').result, { type: 'queued', position: 2 });
    assert.deepEqual(d.waiters('db'), [b, c]);
    const r = d.release(a, 'db', ta);
    assert.deepEqual(r.result, { type: 'ok' });
    assert.deepEqual(r.events, [
      { type: 'released', session: a, name: 'db', token: ta, reason: 'release' },
      { type: 'granted', session: b, name: 'db', token: d.index, mode: 'exclusive' },
    ]);
    const tb = d.index;
    assert.ok(tb > ta);
    d.release(b, 'db', tb);
    assert.deepEqual(d.holders('db'), [[c, d.index, 'exclusive']]);
    d.release(c, 'db', d.index);
    assert.equal(d.m.lock('db'), null, 'an idle lock leaves no record');
  });

  it('refuses a release by another session or with a wrong token, changing nothing', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'db').result);
    const wrongSession = d.release(b, 'db', t);
    assert.equal(wrongSession.result.type, 'error');
    assert.equal(wrongSession.result.type === 'error' && wrongSession.result.code, 'NOT_HOLDER');
    assert.equal(wrongSession.result.type === 'error' && wrongSession.result.currentToken, t);
    const wrongToken = d.release(a, 'db', t + 100);
    assert.equal(wrongToken.result.type === 'error' && wrongToken.result.code, 'NOT_HOLDER');
    const unknownLock = d.release(a, 'nope', t);
    assert.equal(unknownLock.result.type === 'error' && unknownLock.result.currentToken, null);
    assert.deepEqual(d.holders('db'), [[a, t, 'exclusive']]);
  });

  it('re-acquiring a held lock answers the same grant and emits nothing', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'db').result);
    const again = d.acquire(a, 'db');
    assert.deepEqual(again.result, { type: 'granted', token: t, mode: 'exclusive' });
    assert.deepEqual(again.events, []);
  });

  it('re-acquiring while queued answers the current place without queueing twice', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    d.acquire(a, 'db');
    d.acquire(b, 'db');
    d.acquire(c, 'db');
    const again = d.acquire(c, 'db');
    assert.deepEqual(again.result, { type: 'queued', position: 2 });
    assert.deepEqual(again.events, []);
    assert.deepEqual(d.waiters('db'), [b, c]);
  });

  it('refuses to change mode of a held or awaited lock', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    d.acquire(a, 'db', { mode: 'shared' });
    const upgrade = d.acquire(a, 'db', { mode: 'exclusive' });
    assert.equal(upgrade.result.type === 'error' && upgrade.result.code, 'CONFLICT');
    d.acquire(b, 'x');
    d.acquire(a, 'x');
    const r = d.acquire(a, 'x', { mode: 'shared' });
    assert.equal(r.result.type === 'error' && r.result.code, 'CONFLICT');
  });

  it('validates names: empty, too long, lone surrogate', () => {
    const d = new Driver();
    const a = d.open();
    for (const name of ['', 'x'.repeat(TEST_CONFIG.maxNameLength + 1), 'a\uD800b']) {
      const r = d.acquire(a, name);
      assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT', JSON.stringify(name.slice(0, 10)));
    }
    // 256 bytes of 2-byte characters is 128 characters: the limit counts bytes
    assert.equal(d.acquire(a, 'é'.repeat(128)).result.type, 'granted');
    assert.equal(d.acquire(a, 'é'.repeat(129)).result.type, 'error');
  });

  it('answers UNKNOWN_SESSION for a session never opened', () => {
    const d = new Driver();
    const r = d.apply({ type: 'acquire', session: 99, seq: 1, name: 'x', mode: 'exclusive', wait: true });
    assert.equal(r.result.type === 'error' && r.result.code, 'UNKNOWN_SESSION');
  });

  it('bounds the locks one session may hold or wait for', () => {
    const d = new Driver({ ...TEST_CONFIG, maxLocksPerSession: 2 });
    const a = d.open();
    d.acquire(a, 'x');
    d.acquire(a, 'y');
    const r = d.acquire(a, 'z');
    assert.equal(r.result.type === 'error' && r.result.code, 'LIMIT_EXCEEDED');
    assert.equal(d.m.lock('z'), null);
    assert.equal(d.acquire(a, 'x').result.type, 'granted', 're-acquire of a held lock is not a new one');
  });
});

describe('shared locks and semaphores', () => {
  it('shared holders hold together', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    for (const s of [a, b, c]) assert.equal(d.acquire(s, 'r', { mode: 'shared' }).result.type, 'granted');
    assert.equal(d.m.lock('r')?.holders.length, 3);
    assert.equal(d.m.lock('r')?.mode, 'shared');
  });

  it('an exclusive waiter waits for all shared holders and blocks later shared ones (no writer starvation)', () => {
    const d = new Driver();
    const [r1, r2, w, r3] = [d.open(), d.open(), d.open(), d.open()];
    const t1 = Driver.token(d.acquire(r1, 'f', { mode: 'shared' }).result);
    const t2 = Driver.token(d.acquire(r2, 'f', { mode: 'shared' }).result);
    assert.deepEqual(d.acquire(w, 'f').result, { type: 'queued', position: 1 });
    assert.deepEqual(d.acquire(r3, 'f', { mode: 'shared' }).result, { type: 'queued', position: 2 });
    assert.equal(d.acquire(d.open(), 'f', { mode: 'shared', wait: false }).result.type, 'busy');
    d.release(r1, 'f', t1);
    assert.deepEqual(d.waiters('f'), [w, r3], 'still one shared holder');
    const r = d.release(r2, 'f', t2);
    assert.deepEqual(d.holders('f'), [[w, d.index, 'exclusive']]);
    assert.equal(r.events.filter((e) => e.type === 'granted').length, 1);
    const tw = d.index;
    d.release(w, 'f', tw);
    assert.deepEqual(d.holders('f'), [[r3, d.index, 'shared']]);
  });

  it('one entry grants several shared waiters with one token, stopping at an exclusive one', () => {
    const d = new Driver();
    const [w, r1, r2, w2, r3] = [d.open(), d.open(), d.open(), d.open(), d.open()];
    const tw = Driver.token(d.acquire(w, 'f').result);
    d.acquire(r1, 'f', { mode: 'shared' });
    d.acquire(r2, 'f', { mode: 'shared' });
    d.acquire(w2, 'f');
    d.acquire(r3, 'f', { mode: 'shared' });
    const r = d.release(w, 'f', tw);
    const grants = r.events.filter((e) => e.type === 'granted');
    assert.deepEqual(
      grants.map((g) => g.type === 'granted' && [g.session, g.token]),
      [
        [r1, d.index],
        [r2, d.index],
      ],
    );
    assert.deepEqual(d.waiters('f'), [w2, r3]);
  });

  it('a limit makes a counting semaphore', () => {
    const d = new Driver();
    const s = [d.open(), d.open(), d.open(), d.open()];
    const t0 = Driver.token(d.acquire(s[0]!, 'pool', { mode: 'shared', limit: 2 }).result);
    d.acquire(s[1]!, 'pool', { mode: 'shared', limit: 2 });
    assert.deepEqual(d.acquire(s[2]!, 'pool', { mode: 'shared', limit: 2 }).result, { type: 'queued', position: 1 });
    const busy = d.acquire(s[3]!, 'pool', { mode: 'shared', limit: 2, wait: false });
    assert.equal(busy.result.type === 'busy' && busy.result.holderCount, 2);
    assert.equal(d.m.lock('pool')?.limit, 2);
    d.release(s[0]!, 'pool', t0);
    assert.deepEqual(
      d.holders('pool').map(([x]) => x),
      [s[1], s[2]],
    );
  });

  it('refuses a shared request whose limit disagrees with the lock', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    d.acquire(a, 'pool', { mode: 'shared', limit: 2 });
    const other = d.acquire(b, 'pool', { mode: 'shared', limit: 3 });
    assert.equal(other.result.type === 'error' && other.result.code, 'CONFLICT');
    const none = d.acquire(c, 'pool', { mode: 'shared' });
    assert.equal(none.result.type === 'error' && none.result.code, 'CONFLICT');
    const reAsk = d.acquire(a, 'pool', { mode: 'shared', limit: 5 });
    assert.equal(reAsk.result.type === 'error' && reAsk.result.code, 'CONFLICT');
    assert.equal(d.m.lock('pool')?.holders.length, 1);
  });

  it('forgets the limit when the last shared party leaves', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'pool', { mode: 'shared', limit: 2 }).result);
    d.release(a, 'pool', t);
    assert.equal(d.acquire(b, 'pool', { mode: 'shared', limit: 7 }).result.type, 'granted');
    assert.equal(d.m.lock('pool')?.limit, 7);
  });

  it('refuses a limit on an exclusive acquire', () => {
    const d = new Driver();
    const a = d.open();
    const r = d.apply({ type: 'acquire', session: a, seq: 1, name: 'x', mode: 'exclusive', wait: true, limit: 2 });
    assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT');
  });
});

describe('cancelWait', () => {
  it('removes a waiter and grants those it was blocking', () => {
    const d = new Driver();
    const [r1, w, r2] = [d.open(), d.open(), d.open()];
    d.acquire(r1, 'f', { mode: 'shared' });
    d.acquire(w, 'f');
    d.acquire(r2, 'f', { mode: 'shared' });
    const r = d.cancelWait(w, 'f');
    assert.deepEqual(r.result, { type: 'ok' });
    assert.deepEqual(r.events, [{ type: 'granted', session: r2, name: 'f', token: d.index, mode: 'shared' }]);
    assert.deepEqual(d.waiters('f'), []);
    assert.deepEqual(d.m.session(w)?.waits, []);
  });

  it('says so when the session is not waiting, with the token when the grant won the race', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'x').result);
    const holding = d.cancelWait(a, 'x');
    assert.equal(holding.result.type === 'error' && holding.result.code, 'CONFLICT');
    assert.equal(holding.result.type === 'error' && holding.result.currentToken, t);
    const nothing = d.cancelWait(b, 'x');
    assert.equal(nothing.result.type === 'error' && nothing.result.code, 'CONFLICT');
  });
});

describe('session end', () => {
  it('close releases held locks, leaves queues and grants the next waiters', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    d.acquire(a, 'x');
    d.acquire(a, 'y');
    d.acquire(b, 'x');
    d.acquire(c, 'y');
    d.acquire(c, 'x');
    const r = d.close(a);
    assert.deepEqual(r.result, { type: 'ok' });
    assert.deepEqual(
      r.events.map((e) => e.type),
      ['sessionClosed', 'released', 'released', 'granted', 'granted'],
    );
    assert.deepEqual(d.holders('x'), [[b, d.index, 'exclusive']]);
    assert.deepEqual(d.holders('y'), [[c, d.index, 'exclusive']]);
    assert.deepEqual(d.waiters('x'), [c]);
    assert.equal(d.m.session(a), null);
    assert.equal(d.m.lock('x')?.delayed, false, 'a close never starts lock-delay');
  });

  it('expiry of a queued session removes it from the queue without granting it', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'x').result);
    d.acquire(b, 'x');
    d.acquire(c, 'x');
    const r = d.expire(b);
    assert.deepEqual(r.events, [{ type: 'sessionExpired', session: b, reason: 'expire' }]);
    assert.deepEqual(d.waiters('x'), [c]);
    d.release(a, 'x', t);
    assert.deepEqual(d.holders('x'), [[c, d.index, 'exclusive']]);
  });

  it('a retried close answers UNKNOWN_SESSION (the session is gone)', () => {
    const d = new Driver();
    const a = d.open();
    assert.deepEqual(d.apply({ type: 'closeSession', session: a, seq: 1 }).result, { type: 'ok' });
    const again = d.apply({ type: 'closeSession', session: a, seq: 1 });
    assert.equal(again.result.type === 'error' && again.result.code, 'UNKNOWN_SESSION');
    assert.equal(d.expire(a).result.type, 'error');
  });
});

describe('lock-delay', () => {
  it('a lock freed by expiry grants nobody until lockDelayElapsed', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    d.acquire(a, 'x', { lockDelayMs: 5000 });
    d.acquire(b, 'x');
    const exp = d.expire(a);
    const since = d.index;
    assert.deepEqual(exp.events.slice(1), [
      { type: 'released', session: a, name: 'x', token: 4, reason: 'expire' },
      { type: 'lockDelayStarted', name: 'x', delayMs: 5000, since },
    ]);
    assert.deepEqual(d.holders('x'), []);
    assert.deepEqual([...d.m.pendingLockDelays()], [{ name: 'x', delayMs: 5000, since }]);
    const busy = d.acquire(c, 'x', { wait: false });
    assert.deepEqual(busy.result, { type: 'busy', holders: [], holderCount: 0, delayed: true });
    assert.equal(d.m.lock('x')?.delayed, true);

    const stale = d.apply({ type: 'lockDelayElapsed', name: 'x', since: since - 1 });
    assert.equal(stale.result.type === 'error' && stale.result.code, 'CONFLICT');
    assert.equal(d.m.lock('x')?.delayed, true, 'a stale timer does not end the delay');

    const end = d.apply({ type: 'lockDelayElapsed', name: 'x', since });
    assert.deepEqual(end.events, [
      { type: 'lockDelayEnded', name: 'x', since },
      { type: 'granted', session: b, name: 'x', token: d.index, mode: 'exclusive' },
    ]);
    assert.deepEqual([...d.m.pendingLockDelays()], []);
    const again = d.apply({ type: 'lockDelayElapsed', name: 'x' });
    assert.equal(again.result.type === 'error' && again.result.code, 'CONFLICT');
  });

  it('keeps an idle lock in delay until it elapses, then drops it', () => {
    const d = new Driver();
    const a = d.open();
    d.acquire(a, 'x', { lockDelayMs: 100 });
    d.expire(a);
    assert.equal(d.m.stats().locks, 1);
    d.apply({ type: 'lockDelayElapsed', name: 'x' });
    assert.equal(d.m.lock('x'), null);
  });

  it('a zero lock-delay (the holder asked for none) frees at once', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    d.acquire(a, 'x', { lockDelayMs: 0 });
    d.acquire(b, 'x');
    const r = d.expire(a);
    assert.ok(!r.events.some((e) => e.type === 'lockDelayStarted'));
    assert.deepEqual(d.holders('x'), [[b, d.index, 'exclusive']]);
  });

  it('uses the config default when the acquire does not say, and caps requests at the maximum', () => {
    const d = new Driver({ ...TEST_CONFIG, defaultLockDelayMs: 700 });
    const a = d.open();
    d.acquire(a, 'x');
    const r = d.expire(a);
    assert.ok(r.events.some((e) => e.type === 'lockDelayStarted' && e.delayMs === 700));
    const b = d.open();
    const tooLong = d.acquire(b, 'y', { lockDelayMs: TEST_CONFIG.maxLockDelayMs + 1 });
    assert.equal(tooLong.result.type === 'error' && tooLong.result.code, 'INVALID_ARGUMENT');
  });

  it('shared holders that remain keep holding during the delay, but nobody new is granted', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    d.acquire(a, 'r', { mode: 'shared', lockDelayMs: 1000 });
    const tb = Driver.token(d.acquire(b, 'r', { mode: 'shared' }).result);
    d.expire(a);
    assert.deepEqual(d.holders('r'), [[b, tb, 'shared']]);
    assert.deepEqual(d.acquire(c, 'r', { mode: 'shared' }).result, { type: 'queued', position: 1 });
    d.apply({ type: 'lockDelayElapsed', name: 'r' });
    assert.equal(d.holders('r').length, 2);
  });

  it('a second expiry during a delay restarts it, never shortening it', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    d.acquire(a, 'r', { mode: 'shared', lockDelayMs: 5000 });
    d.acquire(b, 'r', { mode: 'shared', lockDelayMs: 1000 });
    d.expire(a);
    const first = d.index;
    d.expire(b);
    assert.deepEqual([...d.m.pendingLockDelays()], [{ name: 'r', delayMs: 5000, since: d.index }]);
    assert.equal(d.apply({ type: 'lockDelayElapsed', name: 'r', since: first }).result.type, 'error');
  });
});

describe('reads', () => {
  it('lists locks by prefix in name order, with a limit', () => {
    const d = new Driver();
    const a = d.open();
    for (const n of ['b/2', 'a/1', 'b/1', 'c']) d.acquire(a, n);
    assert.deepEqual(
      d.m.locks('b/').map((l) => l.name),
      ['b/1', 'b/2'],
    );
    assert.deepEqual(
      d.m.locks('', 2).map((l) => l.name),
      ['a/1', 'b/1'],
    );
  });

  it('session info lists held locks and waits', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'x').result);
    d.acquire(b, 'x', { mode: 'exclusive' });
    d.acquire(b, 'y', { mode: 'shared' });
    assert.deepEqual(d.m.session(b), {
      id: b,
      ttlMs: 10_000,
      label: null,
      owner: null,
      locks: [{ name: 'y', token: d.index, mode: 'shared' }],
      waits: [{ name: 'x', mode: 'exclusive' }],
      elections: [],
      ephemeralKeys: [],
      pendingResults: 2,
      ackedSeq: 0,
    });
    assert.deepEqual(
      [...d.m.sessions()].map((s) => s.id),
      [a, b],
    );
    assert.deepEqual([...d.m.sessionLeases()], [
      { session: a, ttlMs: 10_000, label: null },
      { session: b, ttlMs: 10_000, label: null },
    ]);
    assert.equal(d.m.session(a)?.locks[0]?.token, t);
    const s = d.m.stats();
    assert.equal(s.sessions, 2);
    assert.equal(s.locks, 2);
    assert.equal(s.holders, 2);
    assert.equal(s.waiters, 1);
  });
});
