// NATS credentials and TLS (README, "Running a cluster"): real nats-server processes that demand
// them, one each (JetStream, replicas 1), and real nodes (src/main.ts). A token server, a server
// with a user/password and an nkey user, and a server requiring TLS and verifying client
// certificates (a CA, a server and a client certificate made with openssl at test time). The right
// settings: the node becomes ready and takes writes; wrong or missing ones: it stops at start
// with a message saying why, exit 1. Settings that cannot work (a file not there, two ways of
// authenticating) are refused by the configuration, naming the variable.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';
import { ORG, KEY, OTHER_ORG, OTHER_KEY, TestServer } from '../helpers/server';
import { natsConnectionOptions } from '../../engine/log/nats';
import { loadConfig } from '../../src/config';

const ROOT = join(import.meta.dir, '..', '..');
const OPENSSL = Bun.which('openssl');
const TOKEN = 'token-0123456789abcdef';
const USER = 'kb-node';
const PASSWORD = 'password-0123456789';
const nkeyUser = nkeys.createUser();
const NKEY_SEED = new TextDecoder().decode(nkeyUser.getSeed());

let dir: string;
let tokenNats: NatsCluster;
let usersNats: NatsCluster;
let tlsNats: NatsCluster;
const nodes: TestServer[] = [];
const certs = (name: string) => join(dir, name);

/** A CA, and a server (127.0.0.1, localhost) and a client certificate it signed: PEM files in `dir`. */
async function makeCertificates(): Promise<void> {
  const run = async (...args: string[]) => {
    const proc = Bun.spawn([OPENSSL!, ...args], { cwd: dir, stdout: 'pipe', stderr: 'pipe' });
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    if (code !== 0) throw new Error(`openssl ${args.join(' ')}: ${err}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca-key.pem',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=kb test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  for (const [name, usage, san] of [
    ['server', 'serverAuth', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    ['client', 'clientAuth', 'subjectAltName=DNS:kb-node'],
  ] as const) {
    await run('req', ...ec, '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', `/CN=kb test ${name}`);
    writeFileSync(certs(`${name}.ext`), `${san}\nextendedKeyUsage=${usage}\nbasicConstraints=CA:FALSE\n`);
    await run(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca-key.pem',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  }
}

const clusterEnv = (nats: NatsCluster, extra: Record<string, string>): Record<string, string> => ({
  CLUSTER_NATS_URLS: nats.urls.join(','),
  CLUSTER_STREAM: 'KB_AUTH_TEST',
  CLUSTER_REPLICAS: '1',
  NODE_ID: 'node-1',
  SNAPSHOT_ON_SHUTDOWN: 'false',
  RATE_LIMIT_RPS: '0',
  ...extra,
});

/** Every CLUSTER_NATS_* variable of this process left out (the test's own, only, reach a node). */
function withoutNatsSettings(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CLUSTER_NATS_')));
}

async function startNode(env: Record<string, string>): Promise<TestServer> {
  const node = await TestServer.start({ env: { ...clusterEnv(tokenNats, {}), ...env } });
  nodes.push(node);
  return node;
}

/** A node that must not start: its exit code and everything it printed. */
async function failedStart(env: Record<string, string>): Promise<{ code: number; output: string }> {
  const dataDir = TestServer.tempDir();
  try {
    const proc = Bun.spawn(['bun', join(ROOT, 'src/main.ts')], {
      cwd: ROOT,
      env: {
        ...withoutNatsSettings(),
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        KB_API_KEYS: `${ORG}:${KEY},${OTHER_ORG}:${OTHER_KEY}`,
        INGEST_WORKERS: '1',
        ...env,
      },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    return { code, output: stdout + stderr };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The node takes a write (a knowledge base, then an item indexed through the job queue) and answers from it. */
async function takesWrites(node: TestServer): Promise<void> {
  const kb = await node.api('POST', '/api/v1/knowledge-bases', { name: 'Secured', type: 'TEXT_COST_EFFECTIVE' });
  expect(kb.status).toBe(201);
  const item = await node.api('POST', `/api/v1/knowledge-bases/${kb.body.data.id}/contents?wait=true`, { text: 'Refunds are issued within 14 days.' });
  expect(item.status).toBe(201);
  expect(item.body.data.status).toBe('ready');
  const found = await node.api('POST', `/api/v1/knowledge-bases/${kb.body.data.id}/search/full-text`, { query: 'refund' });
  expect(found.status).toBe(200);
  expect(found.body.data.length).toBe(1);
}

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  if (!OPENSSL) throw new Error('openssl is missing: the TLS tests make their certificates with it');
  dir = mkdtempSync(join(tmpdir(), 'kb-nats-auth-'));
  await makeCertificates();
  [tokenNats, usersNats, tlsNats] = await Promise.all([
    NatsCluster.start(1, { config: `authorization { token: "${TOKEN}" }`, connect: { token: TOKEN } }),
    NatsCluster.start(1, {
      config: `authorization { users: [ { user: "${USER}", password: "${PASSWORD}" }, { nkey: "${nkeyUser.getPublicKey()}" } ] }`,
      connect: { user: USER, pass: PASSWORD },
    }),
    NatsCluster.start(1, {
      config: `tls { cert_file: "${certs('server.pem')}", key_file: "${certs('server-key.pem')}", ca_file: "${certs('ca.pem')}", verify: true, timeout: 5 }`,
      connect: { tls: { caFile: certs('ca.pem'), certFile: certs('client.pem'), keyFile: certs('client-key.pem') } },
    }),
  ]);
}, 60_000);

afterAll(async () => {
  for (const n of nodes) await n.kill9();
  for (const n of nodes) n.cleanup();
  await Promise.all([tokenNats?.stop(), usersNats?.stop(), tlsNats?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('NATS credentials', () => {
  test('a token: right → ready and takes writes; wrong or missing → exit 1, saying the credentials were refused', async () => {
    const [node, wrong, missing] = await Promise.all([
      startNode(clusterEnv(tokenNats, { CLUSTER_NATS_TOKEN: TOKEN })),
      failedStart(clusterEnv(tokenNats, { CLUSTER_NATS_TOKEN: 'not-the-token' })),
      failedStart(clusterEnv(tokenNats, {})),
    ]);
    await takesWrites(node);
    for (const failed of [wrong, missing]) {
      expect(failed.code).toBe(1);
      expect(failed.output).toContain('cannot connect to NATS at nats://127.0.0.1:');
      expect(failed.output).toContain("refused this node's credentials");
    }
  }, 60_000);

  test('a user and password, or an nkey seed: right → ready and takes writes (the admin command too); a wrong password → exit 1', async () => {
    const [byPassword, byNkey, wrong] = await Promise.all([
      startNode(clusterEnv(usersNats, { CLUSTER_NATS_USER: USER, CLUSTER_NATS_PASSWORD: PASSWORD })),
      startNode(clusterEnv(usersNats, { CLUSTER_NATS_NKEY_SEED: NKEY_SEED, NODE_ID: 'node-2' })),
      failedStart(clusterEnv(usersNats, { CLUSTER_NATS_USER: USER, CLUSTER_NATS_PASSWORD: 'wrong-password' })),
    ]);
    await takesWrites(byPassword);
    await takesWrites(byNkey);
    expect(wrong.code).toBe(1);
    expect(wrong.output).toContain("refused this node's credentials");
    // Keys issued through the admin command (the cluster's key stream) with the same settings.
    const admin = Bun.spawn(['bun', join(ROOT, 'src/admin.ts'), 'org', 'create', '--name', 'Acme'], {
      cwd: ROOT,
      env: { ...withoutNatsSettings(), DATA_DIR: byPassword.dataDir, ...clusterEnv(usersNats, { CLUSTER_NATS_USER: USER, CLUSTER_NATS_PASSWORD: PASSWORD }) },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err, code] = await Promise.all([new Response(admin.stdout).text(), new Response(admin.stderr).text(), admin.exited]);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out.trim()).toMatch(/^org_/);
  }, 60_000);
});

describe('NATS over TLS', () => {
  const tlsEnv = (extra: Record<string, string>) =>
    clusterEnv(tlsNats, { CLUSTER_NATS_URLS: tlsNats.urls.map((u) => u.replace('nats://', 'tls://')).join(','), ...extra });

  test('the CA and a client certificate: ready and takes writes; without the CA, or without a client certificate → exit 1, saying why', async () => {
    const client = { CLUSTER_NATS_TLS_CERT: certs('client.pem'), CLUSTER_NATS_TLS_KEY: certs('client-key.pem') };
    const [node, noCa, noClientCert] = await Promise.all([
      startNode(tlsEnv({ CLUSTER_NATS_TLS_CA: certs('ca.pem'), ...client })),
      failedStart(tlsEnv({ ...client })),
      failedStart(tlsEnv({ CLUSTER_NATS_TLS_CA: certs('ca.pem') })),
    ]);
    await takesWrites(node);
    expect(noCa.code).toBe(1);
    expect(noCa.output).toContain('cannot connect to NATS at tls://127.0.0.1:');
    expect(noCa.output).toContain("the server's TLS certificate was not accepted");
    // The server closes the connection; the client notices only at its connection timeout (20 s).
    expect(noClientCert.code).toBe(1);
    expect(noClientCert.output).toContain('cannot connect to NATS at tls://127.0.0.1:');
    expect(noClientCert.output).toContain("refused this node's TLS client certificate");
  }, 60_000);
});

describe('settings refused at start', () => {
  /** loadConfig() under these CLUSTER_NATS_* variables (and no others). */
  function configWith(env: Record<string, string>) {
    const others = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CLUSTER_NATS_')));
    return loadConfig({ ...others, CLUSTER_NATS_URLS: 'nats://127.0.0.1:1', ...env }).cluster!;
  }

  test('a file not there, half a pair, two ways of authenticating, a malformed seed or URL: an error naming the variable', () => {
    expect(() => configWith({ CLUSTER_NATS_TLS_CA: join(dir, 'absent.pem') })).toThrow('CLUSTER_NATS_TLS_CA: no such file');
    expect(() => configWith({ CLUSTER_NATS_CREDS: join(dir, 'absent.creds') })).toThrow('CLUSTER_NATS_CREDS: no such file');
    expect(() => configWith({ CLUSTER_NATS_CREDS: certs('ca.pem') })).toThrow('is not a NATS creds file');
    expect(() => configWith({ CLUSTER_NATS_TLS_CERT: certs('client.pem') })).toThrow('CLUSTER_NATS_TLS_CERT is set without CLUSTER_NATS_TLS_KEY');
    expect(() => configWith({ CLUSTER_NATS_USER: USER })).toThrow('CLUSTER_NATS_USER is set without CLUSTER_NATS_PASSWORD');
    expect(() => configWith({ CLUSTER_NATS_TOKEN: TOKEN, CLUSTER_NATS_USER: USER, CLUSTER_NATS_PASSWORD: PASSWORD })).toThrow(
      'CLUSTER_NATS_USER and CLUSTER_NATS_TOKEN are set',
    );
    expect(() => configWith({ CLUSTER_NATS_NKEY_SEED: 'SUnot-a-seed' })).toThrow('CLUSTER_NATS_NKEY_SEED must be an nkey user seed');
    expect(() => configWith({ CLUSTER_NATS_URLS: 'http://127.0.0.1:4222' })).toThrow('CLUSTER_NATS_URLS: "http://127.0.0.1:4222" is neither');
  });

  test('what is set reaches the connection options; tls:// or a CA makes TLS required', () => {
    expect(configWith({}).natsAuth).toEqual({});
    expect(natsConnectionOptions(['nats://127.0.0.1:1'], configWith({}).natsAuth).tls).toBeUndefined();
    expect(natsConnectionOptions(['tls://127.0.0.1:1'], {}).tls).toEqual({});
    const auth = configWith({ CLUSTER_NATS_TOKEN: TOKEN, CLUSTER_NATS_TLS_CA: certs('ca.pem') }).natsAuth;
    expect(auth).toEqual({ token: TOKEN, tls: { caFile: certs('ca.pem') } });
    const options = natsConnectionOptions(['nats://127.0.0.1:1'], auth);
    expect({ token: options.token, tls: options.tls }).toEqual({ token: TOKEN, tls: { caFile: certs('ca.pem') } });
    expect(configWith({ CLUSTER_NATS_NKEY_SEED: NKEY_SEED }).natsAuth).toEqual({ nkeySeed: NKEY_SEED });
  });

  test('a missing file stops the server at start: exit 1, naming the variable', async () => {
    const failed = await failedStart(clusterEnv(tokenNats, { CLUSTER_NATS_TOKEN: TOKEN, CLUSTER_NATS_TLS_CA: join(dir, 'absent.pem') }));
    expect(failed.code).toBe(1);
    expect(failed.output).toContain('CLUSTER_NATS_TLS_CA: no such file');
  }, 30_000);
});
