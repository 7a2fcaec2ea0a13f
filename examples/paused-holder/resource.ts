// The fenced resources the paused-holder story can be told against. Each resource has two
// sides: the story's side (`FencedResource`: B's write, reading the outcome, cleanup), and
// client A's side (`openWriter(spec)`, in A's own process): A learns how to reach the
// resource from one command-line argument, `spec`.
//
//   - HTTP (default): a FencedRegister behind a local HTTP endpoint; spec is its URL.
//   - PostgreSQL: a row written inside PostgresFence.write; spec is a JSON object
//     {"kind":"postgres", ...} (see postgres-resource.ts).
//
// Outcomes of a write use one convention for every resource, so the story can compare them:
// status 200 accepted, 409 refused as stale (StaleTokenError), 500 failed otherwise. For
// the HTTP resource the status is the real HTTP status.
import { createServer, type Server } from 'node:http';
import { FencedRegister, StaleTokenError } from '../../src/fence/index.js';

export interface WriteOutcome {
  status: number;
  body: {
    accepted: boolean;
    /** The resource's fence (highest token it has accepted) when it refused the write. */
    fence?: string;
    error?: string;
    /** The error's class name (StaleTokenError for a refused token). */
    errorName?: string;
  };
}

/** The story's handle on a fenced resource. */
export interface FencedResource {
  /** How client A reaches the resource: passed to A on its command line. */
  readonly spec: string;
  /** What the story calls the resource in its narration. */
  readonly label: string;
  /** B's write, from the story process. */
  write(token: number, value: string): Promise<WriteOutcome>;
  /** The value the resource holds and its fence ('null' before the first accepted write). */
  read(): Promise<{ value: string; fence: string }>;
  close(): Promise<void>;
}

/** Client A's side: writes with a token, never throws for a refusal. */
export interface ResourceWriter {
  write(token: number, value: string): Promise<WriteOutcome>;
  close(): Promise<void>;
}

/** The outcome of a write that threw, by the shared convention. */
export function outcomeOfError(e: unknown): WriteOutcome {
  if (e instanceof StaleTokenError) {
    return { status: 409, body: { accepted: false, fence: String(e.fence), error: e.message, errorName: e.name } };
  }
  const err = e instanceof Error ? e : new Error(String(e));
  return { status: 500, body: { accepted: false, error: err.message, errorName: err.name } };
}

/** A fenced register behind HTTP: POST {token, value}; 200 accepted, 409 stale token. */
export function startResource(): Promise<{ server: Server; url: string; register: FencedRegister<string> }> {
  const register = new FencedRegister<string>('(empty)', 'report');
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      try {
        const { token, value } = JSON.parse(body) as { token: number; value: string };
        register.write(token, value);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: true }));
      } catch (e) {
        const out = outcomeOfError(e);
        res.writeHead(out.status === 409 ? 409 : 400, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out.body));
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}/report`, register });
    }),
  );
}

async function postTo(url: string, token: number, value: string): Promise<WriteOutcome> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, value }),
  });
  return { status: res.status, body: (await res.json()) as WriteOutcome['body'] };
}

/** The default resource: startResource() as a FencedResource. */
export async function httpResource(): Promise<FencedResource> {
  const { server, url, register } = await startResource();
  return {
    spec: url,
    label: 'the report (an HTTP service with a FencedRegister)',
    write: (token, value) => postTo(url, token, value),
    read: async () => ({ value: register.value, fence: String(register.fence) }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Client A's writer for `spec`: a URL (HTTP) or a JSON object with a `kind`. */
export async function openWriter(spec: string): Promise<ResourceWriter> {
  if (spec.startsWith('{')) {
    const parsed = JSON.parse(spec) as { kind?: unknown };
    if (parsed.kind === 'postgres') {
      // Loaded only here, so the HTTP story never needs pg.
      const { openPostgresWriter } = await import('./postgres-resource.js');
      return openPostgresWriter(spec);
    }
    throw new Error(`unknown resource kind ${JSON.stringify(parsed.kind)}`);
  }
  return { write: (token, value) => postTo(spec, token, value), close: async () => {} };
}
