// Charging a customer at most once, under a lock, through an API that de-duplicates by
// idempotency key: the pattern of the payment story, shared by its worker process and the
// story itself.
//
// lock.once(opKey, fn) records the operation in the cluster's ledger before fn runs and its
// result after. fn gets the ledger's idempotency key for the operation — the same key for
// every attempt by every holder — and passes it to the API, which charges once per key.
import type { InDoubtPolicy, Lock } from '../../src/client/index.js';
import type { Charge } from './payment-api.js';

/** What a worker records in the ledger for a charge (it must survive JSON). */
export interface Receipt {
  chargeId: string;
  amount: number;
  idempotencyKey: string;
  /** True when the API answered with an earlier charge for the same key. */
  replayed: boolean;
  /** Who recorded this receipt, and with which fencing token. */
  recordedBy: string;
  token: number;
}

/** POST /charges with the key; throws on anything but a charge. */
export async function postCharge(
  apiUrl: string,
  idempotencyKey: string,
  amount: number,
  signal?: AbortSignal,
): Promise<{ charge: Charge; replayed: boolean }> {
  const res = await fetch(`${apiUrl}/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ amount, currency: 'eur', description: 'order 42' }),
    ...(signal ? { signal } : {}),
  });
  const body = (await res.json()) as Charge & { error?: string };
  if (res.status !== 200 && res.status !== 201) throw new Error(`payment API answered ${res.status}: ${body.error ?? ''}`);
  return { charge: body, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

export interface ChargeOnceOptions {
  /** Names the worker in the receipt. */
  who: string;
  inDoubt?: InDoubtPolicy;
  /** Runs after the API charged and before the result is recorded (the story pauses here). */
  afterCharge?: (receipt: Receipt) => Promise<void>;
}

/** Charges `amount` once for `opKey` among all holders of `lock`; returns the recorded receipt. */
export function chargeOnce(lock: Lock, opKey: string, apiUrl: string, amount: number, opts: ChargeOnceOptions): Promise<Receipt> {
  return lock.once(
    opKey,
    async (idempotencyKey, signal) => {
      // The signal aborts the request if the lease is lost while it is in flight; the
      // key makes a request that got through anyway harmless to repeat.
      const { charge, replayed } = await postCharge(apiUrl, idempotencyKey, amount, signal);
      const receipt: Receipt = { chargeId: charge.id, amount: charge.amount, idempotencyKey, replayed, recordedBy: opts.who, token: lock.token };
      await opts.afterCharge?.(receipt);
      return receipt;
    },
    opts.inDoubt ? { inDoubt: opts.inDoubt } : {},
  );
}
