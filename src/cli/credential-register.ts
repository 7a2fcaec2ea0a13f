// `palisade secret ...` and `palisade token ...`: rotating the cluster secret and the client
// tokens in a config file (credential-files.ts, loaded when a command runs).
import type { Command } from 'commander';
import type { TokenAddOptions } from './credential-files.js';

const files = () => import('./credential-files.js');
const say = (text: string): void => void process.stderr.write(`${text}\n`);

export function registerCredentialFileCommands(program: Command): void {
  const secret = program
    .command('secret')
    .description('rotate the cluster secret in a config file: add the new one, use it, remove the old one; reload every node after each step (docs/operations.md)');
  secret
    .command('add')
    .description('add a new secret after the ones there (32 random bytes, or --from FILE): nodes reloaded with the file accept it')
    .requiredOption('--config <file>', 'the cluster config file')
    .option('--from <file>', 'the new secret from this file (- for stdin) instead of a random one')
    .action(async (o: { config: string; from?: string }) => say(await (await files()).secretAdd(o)));
  secret
    .command('use')
    .description('move the newest secret first: nodes reloaded with the file prove it (every node must accept it first)')
    .requiredOption('--config <file>', 'the cluster config file')
    .action(async (o: { config: string }) => say(await (await files()).secretUse(o)));
  secret
    .command('remove')
    .description('keep only the first secret: nodes reloaded with the file refuse the others (every node must prove the first)')
    .requiredOption('--config <file>', 'the cluster config file')
    .action(async (o: { config: string }) => say(await (await files()).secretRemove(o)));

  const token = program.command('token').description('client tokens in a config file: add one, retire the older tokens of a name, remove a name; reload every node after each (docs/operations.md)');
  token
    .command('add')
    .description('add a token and print it: a second token of an existing name (same rights, same sessions: a rotation), or a new name')
    .argument('<name>', 'the token\'s name')
    .requiredOption('--config <file>', 'the cluster config file')
    .option('--from <file>', 'the token from this file (- for stdin) instead of a random one')
    .option('--prefixes <list>', 'a new name only: the names it may use, comma-separated')
    .option('--read-only', 'a new name only: it may not change anything')
    .option('--admin', 'a new name only: it may change the cluster')
    .action(async (name: string, o: TokenAddOptions) => {
      const { token: value, said } = await (await files()).tokenAdd(name, o);
      process.stdout.write(`${value}\n`);
      say(said);
    });
  token
    .command('retire')
    .description('remove every token of a name but the newest (after its clients use the newest)')
    .argument('<name>', 'the token\'s name')
    .requiredOption('--config <file>', 'the cluster config file')
    .action(async (name: string, o: { config: string }) => say(await (await files()).tokenRetire(name, o)));
  token
    .command('remove')
    .description('remove every token of a name: reloaded nodes close its connections and refuse it')
    .argument('<name>', 'the token\'s name')
    .requiredOption('--config <file>', 'the cluster config file')
    .action(async (name: string, o: { config: string }) => say(await (await files()).tokenRemove(name, o)));
}
