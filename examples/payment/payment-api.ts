// A local stand-in for a payment provider's API, as the payment story needs it: it records
// charges and de-duplicates them by the Idempotency-Key header, the way Stripe, Adyen and
// most payment APIs do. It knows nothing of locks or tokens: a remote system of this kind
// cannot check a fencing token, only remember keys.
//
//   POST /charges   Idempotency-Key: <key>   {"amount": 4200, "currency": "eur", "description": "..."}
//     201 {charge}                       a new charge
//     200 {charge} Idempotent-Replayed: true   the key was seen: the original charge, nothing new
//     409 {error}                        the key was seen with different parameters
//     400 {error}                        no key, or a malformed body
//   GET /charges    200 {"charges": [...], "requests": <POSTs received>}
//
// Run on its own (the story runs it as a separate process):
//   node --import tsx examples/payment/payment-api.ts [--port N]
// It prints one JSON line {"event":"listening","url":"http://127.0.0.1:N"} once it listens.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';

export interface Charge {
  id: string;
  amount: number;
  currency: string;
  description: string;
  idempotencyKey: string;
  createdAt: string;
}

export interface ChargesView {
  charges: Charge[];
  /** Every POST /charges received, replays and refusals included. */
  requests: number;
}

const MAX_BODY = 64 * 1024;

export function createPaymentApi(): Server {
  const charges: Charge[] = [];
  const byKey = new Map<string, Charge>();
  let requests = 0;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };

  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        body += d;
        if (body.length > MAX_BODY) reject(new Error('body too large'));
      });
      req.on('end', () => resolve(body));
      req.on('error', reject);
    });

  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/charges') {
      return send(res, 200, { charges, requests } satisfies ChargesView);
    }
    if (req.method !== 'POST' || path !== '/charges') return send(res, 404, { error: 'not found' });
    requests++;
    readBody(req).then(
      (text) => {
        const key = req.headers['idempotency-key'];
        if (typeof key !== 'string' || key === '') return send(res, 400, { error: 'the Idempotency-Key header is required' });
        let params: { amount?: unknown; currency?: unknown; description?: unknown };
        try {
          params = JSON.parse(text) as typeof params;
        } catch {
          return send(res, 400, { error: 'the body is not JSON' });
        }
        const { amount, currency = 'eur', description = '' } = params;
        if (typeof amount !== 'number' || !Number.isInteger(amount) || amount <= 0) {
          return send(res, 400, { error: 'amount must be a positive whole number of minor units' });
        }
        if (typeof currency !== 'string' || typeof description !== 'string') return send(res, 400, { error: 'bad currency or description' });
        const seen = byKey.get(key);
        if (seen) {
          if (seen.amount !== amount || seen.currency !== currency) {
            return send(res, 409, { error: `idempotency key ${key} was used with different parameters` });
          }
          return send(res, 200, seen, { 'idempotent-replayed': 'true' });
        }
        const charge: Charge = {
          id: `ch_${charges.length + 1}`,
          amount,
          currency,
          description,
          idempotencyKey: key,
          createdAt: new Date().toISOString(),
        };
        charges.push(charge);
        byKey.set(key, charge);
        return send(res, 201, charge);
      },
      (e: unknown) => send(res, 400, { error: (e as Error).message }),
    );
  });
}

/** Starts the API on 127.0.0.1 (port 0: any free one). */
export function startPaymentApi(port = 0): Promise<{ server: Server; url: string }> {
  const server = createPaymentApi();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const a = server.address();
      resolve({ server, url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : port}` });
    });
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf('--port');
  const { server, url } = await startPaymentApi(at >= 0 ? Number(process.argv[at + 1]) : 0);
  process.stdout.write(`${JSON.stringify({ event: 'listening', url })}\n`);
  const stop = (): void => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
