// `palisade serve`: run one node until SIGTERM/SIGINT.
import { pino } from 'pino';
import { loadConfig, nodeById } from '../server/config.js';
import { PalisadeNode } from '../server/node.js';

export async function serve(opts: { config: string; id: string; logLevel: string }): Promise<void> {
  const config = loadConfig(opts.config);
  nodeById(config, opts.id);
  const logger = pino({ level: opts.logLevel, base: { node: opts.id, pid: process.pid } });
  const node = new PalisadeNode({ config, id: opts.id, logger });
  let stopping = false;
  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: sig }, 'shutting down');
    node.stop().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
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
