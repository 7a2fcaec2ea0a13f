// `palisade serve`: run one node until SIGTERM/SIGINT.
import { pino } from 'pino';
import { loadConfig, nodeById } from '../config/cluster-config.js';
import { secureDataDir } from '../server/data-dir.js';
import { becomeDataOwner } from './data-owner.js';
import { exposureProblems } from '../server/exposure.js';
import { PalisadeNode } from '../server/node.js';
import { joinCredentials, type CredentialFlags } from './credentials.js';

export interface ServeOptions extends CredentialFlags {
  readonly config: string;
  readonly id: string;
  readonly logLevel: string;
  readonly join?: string;
  readonly allowInsecure?: boolean;
}

export async function serve(opts: ServeOptions): Promise<void> {
  const config = loadConfig(opts.config);
  const self = nodeById(config, opts.id);
  const logger = pino({ level: opts.logLevel, base: { node: opts.id, pid: process.pid } });
  const insecure = exposureProblems(config, self);
  if (insecure.length > 0 && !opts.allowInsecure) {
    for (const p of insecure) process.stderr.write(`palisade serve: refusing to start: ${p}\n`);
    process.stderr.write('palisade serve: (to run like this anyway, on a network you trust, pass --allow-insecure)\n');
    process.exit(1);
  }
  const join = opts.join ? opts.join.split(',').map((u) => u.trim()).filter(Boolean) : [];
  // Read as the invoking user, before the process may become the data directory's owner.
  let credentials;
  try {
    credentials = join.length > 0 ? joinCredentials(config, opts.id, opts, process.env) : {};
  } catch (e) {
    process.stderr.write(`palisade serve: ${(e as Error).message}\n`);
    process.exit(1);
  }
  for (const p of insecure) logger.warn(`running insecurely (--allow-insecure): ${p}`);
  try {
    const owner = becomeDataOwner(self.dataDir);
    if (owner) logger.info({ uid: owner.uid, gid: owner.gid, owner: owner.from }, 'started as root: running as the owner of the data directory\'s parent, so the service user can use what this node writes');
    secureDataDir(self.dataDir);
  } catch (e) {
    process.stderr.write(`palisade serve: cannot prepare the data directory ${self.dataDir}: ${(e as Error).message}\n`);
    process.exit(1);
  }
  let stopping = false;
  const shutdown = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'shutting down');
    node.stop().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const node = new PalisadeNode({
    config,
    id: opts.id,
    logger,
    join,
    joinCredentials: credentials,
    onRemoved: (why) => {
      process.stderr.write(`palisade serve: ${opts.id} was ${why}; stopping\n`);
      shutdown(why);
    },
  });
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  try {
    await node.start();
  } catch (e) {
    logger.fatal({ err: e }, 'start-up failed');
    process.stderr.write(`palisade serve: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
