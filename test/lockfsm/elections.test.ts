import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Driver } from './driver.js';

function campaign(d: Driver, session: number, election: string, value: string) {
  return d.apply({ type: 'campaign', session, seq: d.seq(session), election, value });
}

describe('elections', () => {
  it('the first candidate leads with the entry index as epoch; others queue FIFO', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    const r = campaign(d, a, 'svc', 'host-a');
    assert.deepEqual(r.result, { type: 'leader', token: d.index });
    assert.deepEqual(r.events, [{ type: 'electionChanged', election: 'svc', leader: a, value: 'host-a', token: d.index }]);
    assert.deepEqual(campaign(d, b, 'svc', 'host-b').result, { type: 'queued', position: 1 });
    assert.deepEqual(campaign(d, c, 'svc', 'host-c').result, { type: 'queued', position: 2 });
    assert.deepEqual(campaign(d, c, 'svc', 'host-c').result, { type: 'queued', position: 2 }, 'no second place');
    assert.deepEqual(d.m.election('svc'), { election: 'svc', leader: a, value: 'host-a', token: 4, candidates: [b, c] });
  });

  it('election names do not collide with lock names', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    d.acquire(a, 'svc');
    assert.equal(campaign(d, b, 'svc', 'v').result.type, 'leader');
    assert.equal(d.m.lock('svc')?.holders[0]?.session, a);
    assert.equal(d.m.election('svc')?.leader, b);
  });

  it('proclaim updates the value only for the leader with its token', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = (campaign(d, a, 'svc', 'v1').result as { token: number }).token;
    campaign(d, b, 'svc', 'vb');
    const r = d.apply({ type: 'proclaim', session: a, seq: d.seq(a), election: 'svc', token: t, value: 'v2' });
    assert.deepEqual(r.result, { type: 'ok' });
    assert.deepEqual(r.events, [{ type: 'electionChanged', election: 'svc', leader: a, value: 'v2', token: t }]);
    const wrongToken = d.apply({ type: 'proclaim', session: a, seq: d.seq(a), election: 'svc', token: t + 1, value: 'x' });
    assert.equal(wrongToken.result.type === 'error' && wrongToken.result.code, 'NOT_HOLDER');
    const notLeader = d.apply({ type: 'proclaim', session: b, seq: d.seq(b), election: 'svc', token: t, value: 'x' });
    assert.equal(notLeader.result.type === 'error' && notLeader.result.code, 'NOT_HOLDER');
    assert.equal(d.m.election('svc')?.value, 'v2');
  });

  it('resign hands leadership to the next candidate with a new, higher epoch', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = (campaign(d, a, 'svc', 'va').result as { token: number }).token;
    campaign(d, b, 'svc', 'vb');
    const r = d.apply({ type: 'resign', session: a, seq: d.seq(a), election: 'svc', token: t });
    assert.deepEqual(r.events, [{ type: 'electionChanged', election: 'svc', leader: b, value: 'vb', token: d.index }]);
    assert.ok(d.index > t);
    const last = d.apply({ type: 'resign', session: b, seq: d.seq(b), election: 'svc', token: d.index });
    assert.deepEqual(last.events, [{ type: 'electionChanged', election: 'svc', leader: null, value: null, token: null }]);
    assert.equal(d.m.election('svc'), null);
  });

  it('a queued candidate withdraws with resign without a token', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    campaign(d, a, 'svc', 'va');
    campaign(d, b, 'svc', 'vb');
    assert.deepEqual(d.apply({ type: 'resign', session: b, seq: d.seq(b), election: 'svc' }).result, { type: 'ok' });
    assert.deepEqual(d.m.election('svc')?.candidates, []);
    const again = d.apply({ type: 'resign', session: b, seq: d.seq(b), election: 'svc' });
    assert.equal(again.result.type === 'error' && again.result.code, 'CONFLICT');
  });

  it('expiry of the leader promotes the next candidate; expiry of a candidate removes it', () => {
    const d = new Driver();
    const [a, b, c] = [d.open(), d.open(), d.open()];
    campaign(d, a, 'svc', 'va');
    campaign(d, b, 'svc', 'vb');
    campaign(d, c, 'svc', 'vc');
    d.expire(b);
    assert.deepEqual(d.m.election('svc')?.candidates, [c]);
    const r = d.expire(a);
    assert.deepEqual(r.events, [
      { type: 'sessionExpired', session: a, reason: 'expire' },
      { type: 'electionChanged', election: 'svc', leader: c, value: 'vc', token: d.index },
    ]);
    assert.deepEqual(d.m.session(c)?.elections, ['svc']);
  });

  it('campaigning again as leader answers the same epoch', () => {
    const d = new Driver();
    const a = d.open();
    const first = campaign(d, a, 'svc', 'v');
    const again = campaign(d, a, 'svc', 'other');
    assert.deepEqual(again.result, first.result);
    assert.deepEqual(again.events, []);
    assert.equal(d.m.election('svc')?.value, 'v');
  });
});
