// Helpers for the operability tests: a strict reader of the Prometheus text format, a
// server-sent-events reader over fetch, and small HTTP wrappers.
import assert from 'node:assert/strict';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

/** Parse text format 0.0.4; throws on any line that is not valid, or a sample whose
 *  family has no # TYPE. */
export function parsePrometheus(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  text.split('\n').forEach((line, i) => {
    if (line === '') return;
    if (line.startsWith('# HELP ')) return;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      assert.ok(name && ['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type ?? ''), `line ${i + 1}: bad TYPE: ${line}`);
      types.set(name, type!);
      return;
    }
    assert.ok(!line.startsWith('#'), `line ${i + 1}: unknown comment: ${line}`);
    const m = SAMPLE.exec(line);
    assert.ok(m, `line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < m[2].length) {
        const l = LABEL.exec(m[2]);
        assert.ok(l, `line ${i + 1}: bad labels: ${m[2]}`);
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      }
    }
    const raw = m[3]!;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    // NaN in any letter case: prom-client writes "Nan" (e.g. the event-loop delay's stddev
    // before it has two samples), and Prometheus reads floats with Go's ParseFloat, which
    // takes any case.
    assert.ok(/^nan$/i.test(raw) || !Number.isNaN(value), `line ${i + 1}: bad value ${raw}`);
    const family = types.has(m[1]!) ? m[1]! : familyOf(m[1]!, types);
    assert.ok(types.has(family), `line ${i + 1}: sample ${m[1]} has no # TYPE`);
    samples.push({ name: m[1]!, labels, value });
  });
  return { types, samples };
}

function familyOf(name: string, types: ReadonlyMap<string, string>): string {
  for (const s of SUFFIXES) if (name.endsWith(s) && types.has(name.slice(0, -s.length))) return name.slice(0, -s.length);
  return name;
}

/** Samples named `name` whose labels include `labels`. */
export function find(e: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one sample named `name` with `labels`; fails when there is none. */
export function value(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = find(e, name, labels);
  assert.ok(found.length >= 1, `no sample ${name}${JSON.stringify(labels)}`);
  return found[0]!.value;
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: (await res.json()) as T };
}

export async function metricsOf(httpUrl: string): Promise<Exposition> {
  const res = await fetch(new URL('/metrics', httpUrl), { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

export interface SseMessage {
  readonly event: string;
  readonly data: unknown;
  /** performance.now() when it was read. */
  readonly at: number;
}

/** Reads an event stream; next(pred) resolves with the first message matching pred. */
export class SseReader {
  private readonly queue: SseMessage[] = [];
  private wake: (() => void) | null = null;
  private readonly abort = new AbortController();
  private ended = false;

  private constructor() {}

  static async open(url: string): Promise<SseReader> {
    const r = new SseReader();
    const res = await fetch(url, { signal: r.abort.signal, headers: { accept: 'text/event-stream' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    void r.pump(res.body!);
    return r;
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of body) {
        buf += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length) this.queue.push({ event, data: JSON.parse(data.join('\n')), at: performance.now() });
          this.wake?.();
        }
      }
    } catch {
      // aborted by close()
    } finally {
      this.ended = true;
      this.wake?.();
    }
  }

  async next(pred: (m: SseMessage) => boolean, timeoutMs: number, what: string): Promise<SseMessage> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const i = this.queue.findIndex(pred);
      if (i >= 0) return this.queue.splice(0, i + 1)[i]!;
      this.queue.length = 0;
      if (this.ended) throw new Error(`event stream ended while waiting for ${what}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  close(): void {
    this.abort.abort();
  }
}
