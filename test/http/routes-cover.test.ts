// Every client-protocol op is either served by an HTTP route or listed, with why, as not
// over HTTP (routes.ts; the compiler checks that each op is in one of them). Here: in one
// only, so that a route added for a listed op also takes it off the list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPS } from '../../src/protocol/ops.js';
import { NOT_OVER_HTTP, ROUTES } from '../../src/server/api/http/routes.js';

test('each op has an HTTP route or a reason it has none, not both', () => {
  const routed = new Set<string>(ROUTES.map((r) => r.op));
  const listed = new Set(Object.keys(NOT_OVER_HTTP));
  assert.deepEqual([...routed].filter((op) => listed.has(op)), [], 'routed and listed as not over HTTP');
  assert.deepEqual(OPS.filter((op) => !routed.has(op) && !listed.has(op)), []);
  for (const [op, why] of Object.entries(NOT_OVER_HTTP)) assert.ok(why.length > 10, `${op}: a reason`);
});
