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
  /** A certificate signed by the cluster CA that expired yesterday. */
  issueExpired(name: string): CertFiles;
  /** A certificate signed by the cluster CA that becomes valid in 2099. */
  issueNotYetValid(name: string): CertFiles;
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

function issueFrom(dir: string, ca: string, name: string, days = 2): CertFiles {
  openssl(['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', String(days), '-extfile', 'leaf.cnf'],
    dir,
  );
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** A certificate valid only from 2099 (`openssl x509` cannot set a start date; `openssl ca` can). */
function issueLater(dir: string, ca: string, name: string): CertFiles {
  openssl(['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  writeFileSync(join(dir, 'later.cnf'), '[ca]\ndefault_ca = c\n[c]\ndatabase = later-index.txt\nnew_certs_dir = .\nserial = later-serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n');
  writeFileSync(join(dir, 'later-index.txt'), '');
  writeFileSync(join(dir, 'later-serial'), '01\n');
  openssl(['ca', '-batch', '-config', 'later.cnf', '-cert', `${ca}.crt`, '-keyfile', `${ca}.key`, '-in', `${name}.csr`, '-out', `${name}.crt`,
    '-startdate', '20990101000000Z', '-enddate', '20990201000000Z', '-notext', '-extfile', 'leaf.cnf'], dir);
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
    // -days -1: valid until a day before it was made.
    issueExpired: (name) => issueFrom(dir, 'cluster-ca', `expired-${name}`, -1),
    issueNotYetValid: (name) => issueLater(dir, 'cluster-ca', `later-${name}`),
    read: (path) => readFileSync(path),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
