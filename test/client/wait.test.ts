// The SDK's one wait helper: whichever of the awaited thing, the deadline and an abort
// comes first settles the wait, and the awaited thing's cleanup runs exactly once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from './fake-clock.js';
import { DeadlineReached, sleep, waitFor, within } from '../../src/client/wait.js';

describe('waitFor', () => {
  it('resolves with the awaited value and cleans up once', async () => {
    const clock = new FakeClock();
    let cleanups = 0;
    let fire: (v: number) => void = () => {};
    const p = waitFor<number>({ clock, deadline: clock.now() + 100 }, (resolve) => {
      fire = resolve;
      return () => cleanups++;
    });
    fire(7);
    fire(8);
    assert.equal(await p, 7);
    clock.advance(200);
    assert.equal(cleanups, 1);
  });

  it('rejects with DeadlineReached at the deadline, or yields onDeadline', async () => {
    const clock = new FakeClock();
    let cleanups = 0;
    const p = waitFor<number>({ clock, deadline: clock.now() + 100 }, () => () => cleanups++);
    clock.advance(99);
    const q = waitFor<string>({ clock, deadline: clock.now() + 1, onDeadline: () => 'late' }, () => {});
    clock.advance(1);
    await assert.rejects(p, DeadlineReached);
    assert.equal(await q, 'late');
    assert.equal(cleanups, 1);
  });

  it('rejects with the abort reason, also when already aborted, and settles once when armed synchronously', async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    let cleanups = 0;
    const p = waitFor<number>({ clock, deadline: Infinity, signal: ac.signal }, () => () => cleanups++);
    ac.abort(new Error('stop'));
    await assert.rejects(p, /stop/);
    await assert.rejects(waitFor({ clock, deadline: Infinity, signal: ac.signal }, () => {}), /stop/);
    assert.equal(await waitFor<number>({ clock, deadline: clock.now() + 5 }, (resolve) => (resolve(1), () => cleanups++)), 1);
    assert.equal(cleanups, 2);
  });

  it('within races a promise; sleep resolves at its time', async () => {
    const clock = new FakeClock();
    const never = new Promise<number>(() => {});
    const p = within(never, { clock, deadline: clock.now() + 10 });
    const s = sleep(clock, 10);
    clock.advance(10);
    await assert.rejects(p, DeadlineReached);
    await s;
    assert.equal(await within(Promise.resolve(3), { clock, deadline: clock.now() + 10 }), 3);
  });
});
