// Deliberately wrong versions of production code, swapped in for one simulated run, to show
// that the whole-node simulator catches each kind of bug; each has a test with a seed that
// finds it (whole-sim.test.ts).
//  - localSettings: a follower applies entries under its own file's settings (it skips the
//    cluster's configure entries), as every node did before settings were replicated;
//  - forwardTwice: a follower hands the leader's answer to a forwarded request to another
//    waiting request as well, so a request can get another command's answer;
//  - leaseWallClock: the leader keeps session deadlines on its wall clock while keepalives
//    renew them on its monotonic clock (a lease armed from the wrong clock);
//  - foreignGrant: the SDK neither pins the cluster id nor keeps a token floor, so a node of
//    another cluster among its endpoints can hand it grants.
import { decodeCommand, LockMachine, type Applied } from '../../../src/lockfsm/index.js';
import { Forwarder, type PeerApp } from '../../../src/server/replication/forwarding.js';
import { LeaderDuties } from '../../../src/server/leases/leader-duties.js';
import type { NodeClock } from '../../../src/server/clock.js';
import { Connection, type ConnectionOptions } from '../../../src/client/connection.js';
import { TokenFloor } from '../../../src/client/token-floor.js';

export type WholePlant = 'localSettings' | 'forwardTwice' | 'leaseWallClock' | 'foreignGrant';
export const WHOLE_PLANTS: readonly WholePlant[] = ['localSettings', 'forwardTwice', 'leaseWallClock', 'foreignGrant'];

/** The lock-delay a planted node's file gives, which marks its machine. */
export const PLANTED_LOCK_DELAY_MS = 1_234;

/** Swaps the planted code in; returns what swaps it back. */
export function plant(kind: WholePlant): () => void {
  switch (kind) {
    case 'localSettings': {
      const original = LockMachine.prototype.applyRaw;
      LockMachine.prototype.applyRaw = function (this: LockMachine, index: number, data: Uint8Array): Applied {
        if (this.settings.defaultLockDelayMs === PLANTED_LOCK_DELAY_MS && decodeCommand(data).type === 'configure') {
          this.skip(index);
          return { result: { type: 'settings', settings: this.settings, changed: [] }, events: [] };
        }
        return original.call(this, index, data);
      };
      return () => void (LockMachine.prototype.applyRaw = original);
    }
    case 'forwardTwice': {
      const original = Forwarder.prototype.onPeerApp;
      Forwarder.prototype.onPeerApp = function (this: Forwarder, from: string, p: PeerApp): void {
        if (p && typeof p === 'object' && p.t === 'fwdRes') {
          const pending = (this as unknown as { pending: Map<number, { resolve: (a: unknown) => void }> }).pending;
          for (const [rid, other] of pending) {
            if (rid === p.rid) continue;
            pending.delete(rid);
            other.resolve(p.ans);
            break;
          }
        }
        original.call(this, from, p);
      };
      return () => void (Forwarder.prototype.onPeerApp = original);
    }
    case 'foreignGrant': {
      const open = Connection.open;
      const check = TokenFloor.prototype.check;
      Connection.open = (url: string, options: ConnectionOptions) => open(url, { ...options, clusterId: () => null });
      TokenFloor.prototype.check = () => null;
      return () => {
        Connection.open = open;
        TokenFloor.prototype.check = check;
      };
    }
    case 'leaseWallClock': {
      const proto = LeaderDuties.prototype as unknown as { now(this: { time: NodeClock }): number };
      const original = proto.now;
      proto.now = function (this: { time: NodeClock }): number {
        return this.time.wall();
      };
      return () => void (proto.now = original);
    }
  }
}
