// Administration: organizations and API keys, stored durably in the key log in DATA_DIR/auth/keys/ (read by
// the running server within a second of a change), or in cluster mode (CLUSTER_NATS_URLS) in the
// cluster's replicated key stream, valid on every node at once.
//
//   bun run admin org create --name "Acme"        → prints the new organization id
//   bun run admin org list
//   bun run admin key issue --org <orgId> [--label ci]  → prints the key once (only its hash is kept)
//   bun run admin key list [--org <orgId>]
//   bun run admin key revoke <keyId>
import { parseArgs } from 'node:util';
import { openKeyRecords } from './auth/key-records';
import { foldKeyRecords, newKeyRecord, newOrgRecord } from './auth/key-store';
import { loadConfig } from './config';
import { commandFor } from './invocation';

const ADMIN = commandFor('admin');
const USAGE = `usage:
  ${ADMIN} org create --name <name>
  ${ADMIN} org list
  ${ADMIN} key issue --org <orgId> [--label <label>]
  ${ADMIN} key list [--org <orgId>]
  ${ADMIN} key revoke <keyId>
(DATA_DIR selects the data directory, default ./data; with CLUSTER_NATS_URLS set, the cluster's keys,
reached with the nodes' CLUSTER_NATS_* credentials and TLS settings)`;

function fail(message: string): never {
  console.error(`error: ${message}\n\n${USAGE}`);
  process.exit(2);
}

function parse() {
  try {
    return parseArgs({
      // `kb-search admin …` (binary) passes the word admin first; `bun run admin …` does not.
      args: Bun.argv.slice(Bun.argv[2] === 'admin' ? 3 : 2),
      options: {
        name: { type: 'string' },
        org: { type: 'string' },
        label: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
  } catch (err) {
    // An unknown or malformed option: the usage, never a stack trace.
    fail(err instanceof Error ? err.message : String(err));
  }
}

const { values, positionals } = parse();
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

const store = await openKeyRecords(loadConfig()).catch((err) => fail(`cannot reach the key store: ${err instanceof Error ? err.message : String(err)}`));
const state = () => foldKeyRecords(store.records());
const [noun, verb, arg] = positionals;
const out = (value: unknown, text: string) => console.log(values.json ? JSON.stringify(value) : text);

switch (`${noun} ${verb}`) {
  case 'org create': {
    const name = values.name?.trim();
    if (!name) fail('--name is required');
    const record = newOrgRecord(name);
    await store.append([record]);
    out(record, (record as { id: string }).id);
    break;
  }
  case 'org list': {
    const orgs = [...state().orgs.values()];
    out(orgs, orgs.map((o) => `${o.id}\t${o.name}\t${o.createdAt}`).join('\n'));
    break;
  }
  case 'key issue': {
    const org = values.org?.trim();
    if (!org) fail('--org is required');
    if (!state().orgs.has(org)) fail(`no organization ${org} (create it with: ${ADMIN} org create --name ...)`);
    const { record, key } = newKeyRecord(org, values.label ?? '');
    await store.append([record]);
    const keyId = (record as { keyId: string }).keyId;
    out({ keyId, orgId: org, key }, `key id: ${keyId}\norganization: ${org}\nkey: ${key}\n(store the key now: only its hash is kept)`);
    break;
  }
  case 'key list': {
    const keys = [...state().keys.values()].filter((k) => !values.org || k.orgId === values.org);
    const view = keys.map(({ hash: _hash, ...k }) => k);
    out(view, view.map((k) => `${k.keyId}\t${k.orgId}\t${k.label || '-'}\t${k.createdAt}\t${k.revokedAt ? `revoked ${k.revokedAt}` : 'active'}`).join('\n'));
    break;
  }
  case 'key revoke': {
    if (!verb || !arg) fail('key id required');
    const key = state().keys.get(arg);
    if (!key) fail(`no key ${arg}`);
    if (key.revokedAt) fail(`key ${arg} was already revoked at ${key.revokedAt}`);
    await store.append([{ t: 'key.revoke', keyId: arg, at: new Date().toISOString() }]);
    out({ keyId: arg, revoked: true }, `revoked ${arg}`);
    break;
  }
  default:
    fail(noun ? `unknown command "${positionals.join(' ')}"` : 'no command');
}
await store.close();
