// Many LockClients (one session each) in the client process, connected in bounded batches.
import { LockClient } from '../../src/client/index.js';

export async function connectClients(endpoints: readonly string[], count: number, ttlMs = 15_000): Promise<LockClient[]> {
  const clients: LockClient[] = [];
  for (let i = 0; i < count; i += 32) {
    const batch = Math.min(32, count - i);
    clients.push(...(await Promise.all(Array.from({ length: batch }, () => LockClient.connect({ endpoints, ttlMs })))));
  }
  return clients;
}

export async function closeClients(clients: readonly LockClient[]): Promise<void> {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
}
