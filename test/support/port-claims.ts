// Claims on TCP ports shared by every test and bench process on this machine, so that two
// suites running side by side never hand out the same port.
//
// Why: a free port is found by binding it and closing it again; the node that will use it
// binds it a few hundred milliseconds later (process start), and a node killed and started
// again by a test leaves its ports unbound for seconds. Another suite probing in that gap
// finds the port free and takes it, and one of the two nodes dies at start-up with
// EADDRINUSE (seen once in CI). A claim is a listening socket in Linux's abstract unix
// namespace named after the port: binding a name is exclusive, needs no file, and the kernel
// drops it when the process ends however it ends (SIGKILL included), so a crashed suite
// leaves no stale claim behind. Claims last for the life of the process that made them.
//
// Elsewhere than Linux there is no abstract namespace; claims always succeed there and the
// gap is as wide as it was before.
import { createServer, type Server } from 'node:net';

const held = new Map<number, Server>();
const supported = process.platform === 'linux';

function claimName(port: number): string {
  return `\0palisade-test-port-${port}`;
}

/** Claims `port` for this process: true if no process (this one included) holds it already. */
export async function claimPort(port: number): Promise<boolean> {
  if (held.has(port)) return false;
  if (!supported) return true;
  const s = createServer();
  const ok = await new Promise<boolean>((resolve, reject) => {
    s.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(false) : reject(e)));
    s.listen(claimName(port), () => resolve(true));
  });
  if (!ok) return false;
  // The claim must not keep a test process alive after its tests are done.
  s.unref();
  held.set(port, s);
  return true;
}

/** Gives a claim back (a port that turned out to be taken by something else). */
export function releasePort(port: number): void {
  held.get(port)?.close();
  held.delete(port);
}
