// A bare HTTP client for the HTTP/JSON API tests: fetch, JSON both ways, nothing hidden.
export interface ApiAnswer {
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any;
  readonly headers: Headers;
}

/** http(s)://host:port of a node's client URL (the API shares the websocket port). */
export function httpBase(clientUrl: string): string {
  return clientUrl.replace(/^ws/, 'http');
}

export async function call(base: string, method: string, path: string, body?: unknown, token?: string): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const res = await fetch(base + path, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the assertion message
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
