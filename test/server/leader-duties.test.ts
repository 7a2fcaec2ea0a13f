// The leader's timers, in process, on a clock the test drives: a real LockMachine and
// LeaseKeeper behind the LeaderCore interface, proposals decoded from what was proposed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { DEFAULT_MACHINE_CONFIG, LockMachine, decodeCommand, encodeCommand, type Command, type MachineError } from '../../src/lockfsm/index.js';
import { LeaderDuties } from '../../src/server/leases/leader-duties.js';
import { LeaseKeeper } from '../../src/server/leases/lease-keeper.js';
import { ClusterClock } from '../../src/server/leases/cluster-clock.js';
import { systemClock } from '../../src/server/clock.js';

const ELECTION_MS = 300;
const TTL_MS = 1_000;

function setup() {
  const machine = new LockMachine(DEFAULT_MACHINE_CONFIG);
  let index = 0;
  const open = () => machine.apply(++index, { type: 'openSession', ttlMs: TTL_MS });
  const proposed: (Command | MachineError)[] = [];
  let leader = true;
  let now = 0;
  const leases = new LeaseKeeper(2 * ELECTION_MS);
  const duties = new LeaderDuties(
    {
      isLeader: () => leader,
      propose: (cmd) => (proposed.push(decodeCommand(encodeCommand(cmd))), ++index),
      machine: () => machine,
      leaderRound: () => {},
    },
    leases,
    { raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: ELECTION_MS }, sessions: { defaultTtlMs: TTL_MS, minTtlMs: 600, maxTtlMs: 60_000, lockDelayMs: 0, maxSessions: 100, maxSessionsPerToken: 100 } },
    new ClusterClock(() => now, () => 0),
    pino({ level: 'silent' }),
    { ...systemClock, now: () => now },
  );
  /** Advance the clock in steps shorter than the election timeout, running expiry rounds. */
  const advance = (ms: number) => {
    for (let t = 0; t < ms; t += 50) {
      now += 50;
      duties.expiryRound();
    }
  };
  return { machine, open, proposed, duties, advance, setLeader: (v: boolean) => (leader = v), jump: (ms: number) => (now += ms) };
}

test('a new leader gives every session a full TTL from its election, then proposes the expiry', () => {
  const s = setup();
  const opened = s.open();
  assert.ok(!('code' in opened.result), 'session opened');
  s.advance(5_000); // long before the election: counts for nothing
  s.duties.becameLeader();
  s.advance(TTL_MS - 100);
  assert.equal(s.proposed.length, 0);
  s.advance(200); // a proposal not yet committed is proposed again only after 2 election timeouts
  assert.deepEqual(s.proposed.map((c) => c.type), ['expireSession']);
});

test('a round that ran late (a paused leader) expires nothing and renews every lease', () => {
  const s = setup();
  s.open();
  s.duties.becameLeader();
  s.advance(TTL_MS - 200);
  s.jump(ELECTION_MS + 1); // the timer did not run for longer than an election timeout
  s.duties.expiryRound();
  assert.equal(s.proposed.length, 0, 'nothing expired on the late round');
  s.advance(TTL_MS - 200);
  assert.equal(s.proposed.length, 0, 'the lease was renewed from the late round');
});

test('a deposed leader proposes nothing', () => {
  const s = setup();
  s.open();
  s.duties.becameLeader();
  s.setLeader(false);
  s.advance(3 * TTL_MS);
  assert.equal(s.proposed.length, 0);
  s.duties.lostLeadership();
  s.duties.stop();
});
