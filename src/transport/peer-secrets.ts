// The cluster secrets one node holds. A node proves itself to its peers with the first and
// accepts a peer that proves any of them, so the secret changes without downtime: the new one
// is added second on every node (all still prove the old one, all accept both), then moved
// first on every node (each proves the new one, all still accept both), then the old one is
// removed (docs/operations.md, "Rotating the cluster secret"). A link is keyed by the secret
// its handshake proved (peer-frames.ts), so removing a secret cuts the links it keyed.
import { createHmac } from 'node:crypto';

export class PeerSecrets {
  readonly list: readonly string[];

  constructor(list: readonly string[]) {
    if (list.length === 0) throw new TypeError('at least one cluster secret is needed');
    if (new Set(list).size !== list.length) throw new TypeError('the cluster secrets must all differ');
    this.list = Object.freeze([...list]);
  }

  /** What this node proves itself with when it dials, and the key of the links it dials. */
  get sending(): string {
    return this.list[0]!;
  }

  accepts(secret: string): boolean {
    return this.list.includes(secret);
  }

  /** The secret that `proves` holds for, or undefined. Every secret is tried whatever
   *  matches, so the time taken does not say which one did. */
  find(proves: (secret: string) => boolean): string | undefined {
    let found: string | undefined;
    for (const s of this.list) if (proves(s) && found === undefined) found = s;
    return found;
  }

  /** A key per secret for `purpose`, the sending secret's first: what is sealed under a key
   *  of the cluster secret (a peer frame, a backup file) is sealed with the first and opened
   *  with whichever of these succeeds, so it stays readable throughout a rotation. */
  candidateKeys(purpose: string): Buffer[] {
    return this.list.map((s) => createHmac('sha256', s).update(`palisade-key:${purpose}`, 'utf8').digest());
  }
}
