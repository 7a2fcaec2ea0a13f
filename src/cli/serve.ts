// `palisade serve`: run one node until SIGTERM/SIGINT; SIGHUP reloads its config file
// (`systemctl reload`: the secrets, tokens and certificates; docs/operations.md).
import { pino } from 'pino';
import { ConfigError, loadConfig, nodeById, type ClusterConfig } from '../config/cluster-config.js';
import { secureDataDir } from '../storage/data-dir.js';
import { becomeDataOwner } from './data-owner.js';
import { exposureProblems } from '../server/exposure.js';
import { PalisadeNode } from '../server/node.js';
import { productionDeps } from '../server/production-deps.js';
import { joinCredentials, type CredentialFlags } from './credentials.js';
import { FATAL_EXIT_WITHIN_MS, SERVE_EXIT } from './exit-codes.js';

export interface ServeOptions extends CredentialFlags {
  readonly config: string;
  readonly id: string;
  readonly logLevel: string;
  readonly join?: string;
  readonly allowInsecure?: boolean;
}

/** A reloaded config, refused as start-up would refuse it where this node is exposed. */
function reloadable(next: ClusterConfig, opts: ServeOptions): ClusterConfig {
  const insecure = opts.allowInsecure ? [] : exposureProblems(next, nodeById(next, opts.id));
  if (insecure.length > 0) throw new ConfigError('(file)', insecure.join('; '));
  return next;
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
    process.exit(SERVE_EXIT.REFUSED);
  }
  for (const p of insecure) logger.warn(`running insecurely (--allow-insecure): ${p}`);
  try {
    const owner = becomeDataOwner(self.dataDir);
    if (owner) logger.info({ uid: owner.uid, gid: owner.gid, owner: owner.from }, 'started as root: running as the owner of the data directory\'s parent, so the service user can use what this node writes');
    secureDataDir(self.dataDir);
  } catch (e) {
    process.stderr.write(`palisade serve: cannot prepare the data directory ${self.dataDir}: ${(e as Error).message}\n`);
    process.exit(SERVE_EXIT.REFUSED);
  }
  let stopping = false;
  let node: PalisadeNode | null = null;
  let started = false;
  const shutdown = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'shutting down');
    (node?.stop() ?? Promise.resolve()).then(
      () => process.exit(SERVE_EXIT.STOPPED),
      (e: unknown) => {
        logger.error({ err: e }, 'shutdown failed');
        process.exit(SERVE_EXIT.REFUSED);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Installed before the node opens: SIGHUP's default would end the process.
  process.on('SIGHUP', () => {
    if (stopping) return;
    if (!node || !started) return void logger.warn('SIGHUP before the node has started: the config is not reloaded (send it again once "node started" is logged)');
    node.reload(() => reloadable(loadConfig(opts.config), opts));
  });
  try {
    node = await PalisadeNode.open(
      {
        config,
        id: opts.id,
        join,
        onRemoved: (why) => {
          process.stderr.write(`palisade serve: ${opts.id} was ${why}; stopping\n`);
          shutdown(why);
        },
        // The node has stopped serving; whatever of its stop is left gets FATAL_EXIT_WITHIN_MS.
        onFatal: (err, kind) => {
          stopping = true;
          const code = kind === 'storage' ? SERVE_EXIT.STORAGE_FAILED : SERVE_EXIT.REFUSED;
          process.stderr.write(`palisade serve: ${opts.id} stopped: ${err.message}\n`);
          setTimeout(() => process.exit(code), FATAL_EXIT_WITHIN_MS);
        },
      },
      productionDeps(config, opts.id, logger, credentials),
    );
    await node.start();
    started = true;
  } catch (e) {
    logger.fatal({ err: e }, 'start-up failed');
    process.stderr.write(`palisade serve: ${(e as Error).message}\n`);
    process.exit(SERVE_EXIT.REFUSED);
  }
}
