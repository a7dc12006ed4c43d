// API keys: from KB_API_KEYS (`org:key,org:key`) and from the key log that the admin command
// appends to (key-records.ts). Only SHA-256 hashes are kept; comparison is constant-time. The
// server follows the key log, so issued and revoked keys take effect within a second.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { newId } from '../../engine';

export type KeyRecord =
  | { t: 'org.create'; id: string; name: string; at: string }
  | { t: 'key.issue'; keyId: string; orgId: string; hash: string; label: string; at: string }
  | { t: 'key.revoke'; keyId: string; at: string };

export interface IssuedKey {
  keyId: string;
  orgId: string;
  label: string;
  createdAt: string;
  revokedAt?: string;
  hash: Buffer;
}

export const hashKey = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

export function generateKey(): string {
  return `kbk_${randomBytes(32).toString('base64url')}`;
}

export function newOrgRecord(name: string): KeyRecord {
  return { t: 'org.create', id: newId('org'), name, at: new Date().toISOString() };
}

export function newKeyRecord(orgId: string, label: string): { record: KeyRecord; key: string } {
  const key = generateKey();
  return {
    key,
    record: { t: 'key.issue', keyId: newId('key'), orgId, hash: hashKey(key).toString('hex'), label, at: new Date().toISOString() },
  };
}

/** Fold key-file records into organizations and keys. */
export function foldKeyRecords(records: KeyRecord[]) {
  const orgs = new Map<string, { id: string; name: string; createdAt: string }>();
  const keys = new Map<string, IssuedKey>();
  for (const r of records) {
    if (r.t === 'org.create') orgs.set(r.id, { id: r.id, name: r.name, createdAt: r.at });
    else if (r.t === 'key.issue') keys.set(r.keyId, { keyId: r.keyId, orgId: r.orgId, label: r.label, createdAt: r.at, hash: Buffer.from(r.hash, 'hex') });
    else if (r.t === 'key.revoke') {
      const k = keys.get(r.keyId);
      if (k) k.revokedAt = r.at;
    }
  }
  return { orgs, keys };
}

export class KeyStore {
  /** orgId → hashes of its active keys. */
  private byOrg = new Map<string, Buffer[]>();
  private readonly envKeys = new Map<string, Buffer[]>();
  /** Records of the key log (key-records.ts, followKeyLog). */
  private readonly records: KeyRecord[] = [];
  /** Records arrived since the last reload (a start-up replay adds many at once: one reload). */
  private changed = false;

  constructor(envSpec: string) {
    for (const pair of envSpec
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const at = pair.indexOf(':');
      if (at <= 0 || at === pair.length - 1) throw new Error('KB_API_KEYS must look like "org-id:key,org-id:key"');
      const org = pair.slice(0, at).trim();
      const list = this.envKeys.get(org) ?? [];
      list.push(hashKey(pair.slice(at + 1).trim()));
      this.envKeys.set(org, list);
    }
    this.reload();
  }

  private reload(): void {
    const next = new Map<string, Buffer[]>();
    for (const [org, hashes] of this.envKeys) next.set(org, [...hashes]);
    const { keys } = foldKeyRecords(this.records);
    for (const k of keys.values()) {
      if (k.revokedAt) continue;
      const list = next.get(k.orgId) ?? [];
      list.push(k.hash);
      next.set(k.orgId, list);
    }
    this.byOrg = next;
  }

  private refreshIfChanged(): void {
    if (!this.changed) return;
    this.changed = false;
    this.reload();
  }

  /** A record of the key log: in effect from the next verification on. */
  add(record: KeyRecord): void {
    this.records.push(record);
    this.changed = true;
  }

  /** True when `key` is an active key of `orgId`. */
  verify(orgId: string, key: string): boolean {
    this.refreshIfChanged();
    const hashes = this.byOrg.get(orgId);
    const presented = hashKey(key);
    let ok = false;
    // Compare against every key of the organization, so timing does not reveal which one matched.
    for (const h of hashes ?? []) if (timingSafeEqual(h, presented)) ok = true;
    return ok;
  }
}
