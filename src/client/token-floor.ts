// The client's token floor (docs/protocol.md §7): the highest fencing token of any grant this
// client has accepted from its cluster, locks and leaderships alike (one index space).
//
// The rule. A grant that answers a request is refused (TOKEN_REGRESSION) when its token is
// not above the floor as it stood when the request was first sent. Why that holds for every
// grant the cluster makes: the floor's token T is the index of an entry that was committed
// before the client saw it; the request's entry is appended later, by a leader that holds
// every committed entry, so its index is above T, and the grant's token is the index of the
// entry that granted it: the request's own entry or a later one.
//
// Why not "above the highest token seen so far": answers and events for different requests
// arrive in no fixed order. Two acquires sent together are granted at 10 and 11, and the
// answer of 11 may come first (the other's answer was lost with a connection and is
// re-delivered by the retry, or its grant is pushed by a follower that applies a tick
// later). Each request is judged against the floor of its own sending, so a re-delivered
// answer (the same token as before) and a grant for another lock granted earlier are not
// regressions. Equality is never legitimate either (the request's entry comes after T's), so
// it is refused too.
//
// The floor only rises with grants this client accepted. What a node says about others'
// grants (lock reads, election events) does not move it: a lying node could otherwise push
// it up and have every true grant refused.
import { TokenRegressionError } from './errors.js';

export class TokenFloor {
  private highest = 0;

  /** The floor a request is judged by: read it before the request is first sent. */
  get current(): number {
    return this.highest;
  }

  /**
   * Judges `token`, granted for `name` by `url` in answer to a request first sent when the
   * floor was `floorAtSend`: the refusal when it is not above that, else null (and the
   * floor rises to it).
   */
  check(token: number, floorAtSend: number, name: string, url: string): TokenRegressionError | null {
    if (token <= floorAtSend) return new TokenRegressionError(name, token, floorAtSend, url);
    if (token > this.highest) this.highest = token;
    return null;
  }
}
