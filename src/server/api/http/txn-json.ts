// A transaction's JSON body (POST /v1/kv/txn) as the protocol's fields: tokens of lock
// compares as decimal strings or numbers, values of puts as `value` (UTF-8 text) or
// `valueBase64`, exactly as a put's. Anything else is passed on as it is, for the request
// validator to refuse with its usual message.
import { tokenFromJson, valueFromJson } from './json-wire.js';

type Input = Readonly<Record<string, unknown>>;

function isObject(x: unknown): x is Input {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function compareFromJson(c: unknown, i: number): unknown {
  if (!isObject(c) || c.token === undefined) return c;
  return { ...c, token: tokenFromJson(c.token, `compare[${i}].token`) };
}

function opFromJson(op: unknown): unknown {
  if (!isObject(op) || op.op !== 'put') return op;
  const { valueBase64: _b64, ...rest } = op;
  return { ...rest, value: valueFromJson(op) };
}

function listOf(x: unknown, each: (item: unknown, i: number) => unknown): unknown {
  return Array.isArray(x) ? x.map(each) : x;
}

export function txnFromJson(b: Input): Record<string, unknown> {
  return {
    compare: listOf(b.compare ?? [], compareFromJson),
    success: listOf(b.success ?? [], opFromJson),
    failure: listOf(b.failure ?? [], opFromJson),
  };
}
