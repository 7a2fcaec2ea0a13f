// Certificates for the TLS tests, made with the openssl CLI (node:crypto cannot make X.509):
// a cluster CA, a certificate per name signed by it (valid for 127.0.0.1 and localhost, as
// server and as client), and a second, unrelated CA for impostors.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertFiles {
  readonly cert: string;
  readonly key: string;
}

export interface TestPki {
  readonly dir: string;
  /** The cluster CA's certificate file. */
  readonly ca: string;
  /** A certificate signed by the cluster CA; files named <name>.crt and <name>.key. */
  issue(name: string): CertFiles;
  /** A certificate from another CA (a different organisation, or an impostor). */
  issueRogue(name: string): CertFiles;
  /** The rogue CA's certificate file. */
  readonly rogueCa: string;
  read(path: string): Buffer;
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string): void {
  openssl(
    ['req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    dir,
  );
}

function issueFrom(dir: string, ca: string, name: string): CertFiles {
  openssl(['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', 'leaf.cnf'],
    dir,
  );
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

export function makePki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-pki-'));
  writeFileSync(
    join(dir, 'leaf.cnf'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n',
  );
  makeCa(dir, 'cluster-ca');
  makeCa(dir, 'rogue-ca');
  return {
    dir,
    ca: join(dir, 'cluster-ca.crt'),
    rogueCa: join(dir, 'rogue-ca.crt'),
    issue: (name) => issueFrom(dir, 'cluster-ca', name),
    issueRogue: (name) => issueFrom(dir, 'rogue-ca', `rogue-${name}`),
    read: (path) => readFileSync(path),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
