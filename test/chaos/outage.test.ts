// The heartbeat's outages, attributed to the fault under which each gap began.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { analyseOutages, faultClass, faultSpans, gapsOf, leaderChangesFromLogs, median, type FaultSpan } from './outage.js';

const span = (kind: string, role: 'leader' | 'follower' | null, start: number, end: number): FaultSpan => ({ kind, role, start, end, detail: '' });
const every100 = (from: number, to: number): number[] => Array.from({ length: Math.floor((to - from) / 100) + 1 }, (_, i) => from + i * 100);

describe('heartbeat outages', () => {
  it('classes faults by family and role', () => {
    assert.equal(faultClass('kill-leader', 'leader'), 'kill/leader');
    assert.equal(faultClass('pause', 'follower'), 'pause/follower');
    assert.equal(faultClass('partition-leader', 'leader'), 'isolate/leader');
    assert.equal(faultClass('partition-one-way', 'leader'), 'one-way/leader');
    assert.equal(faultClass('pause-client', null), 'client-pause');
  });

  it('finds gaps longer than 250 ms only', () => {
    assert.deepEqual(gapsOf([0, 100, 200, 450, 550, 900]), [[550, 900]]);
  });

  it('puts a gap on the fault that started in it, else the one active, else a recent heal; faults without gaps cost 0', () => {
    const faults = [span('kill-leader', 'leader', 1_000, 2_000), span('pause', 'follower', 5_000, 6_000), span('partition-leader', 'leader', 8_000, 9_000)];
    // gap 900→2300 (kill started inside), none during the pause, gap 9200→9900 after the heal
    const ok = [...every100(0, 950), ...every100(2_300, 9_200), ...every100(9_900, 11_000)];
    const changes = [{ atMs: 1_400, node: 'n2', term: 3 }];
    const r = analyseOutages(ok, faults, changes);
    assert.deepEqual(r.gaps.map((g) => g.cause), ['kill/leader', 'isolate/leader (heal)']);
    assert.deepEqual(r.perFault.map((f) => Math.round(f.outageMs)), [1_400, 0, 700]);
    assert.equal(r.perFault[0]!.electionMs, 400);
    assert.equal(r.perFault[0]!.serveMs, 900);
    assert.equal(r.longestGapMs, 1_400);
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
  });

  it('pairs fault records and reads "became leader" from pino lines', () => {
    const spans = faultSpans(
      [
        { event: 'fault', kind: 'kill', phase: 'start', atMs: 10, detail: 'a', role: 'leader' },
        { event: 'fault', kind: 'kill', phase: 'end', atMs: 20, detail: 'b' },
        { event: 'fault', kind: 'pause', phase: 'start', atMs: 30, detail: 'c' },
      ],
      99,
    );
    assert.deepEqual(spans.map((s) => [s.kind, s.role, s.start, s.end]), [['kill', 'leader', 10, 20], ['pause', null, 30, 99]]);
    const text = ['{"level":30,"time":1500,"msg":"became leader","term":4}', '{"time":1600,"msg":"other"}', '{"time":17'].join('\n');
    assert.deepEqual(leaderChangesFromLogs([{ node: 'n1', text }], 1_000), [{ atMs: 500, node: 'n1', term: 4 }]);
  });
});
