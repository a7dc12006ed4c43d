// A real NATS JetStream cluster for tests: three nats-server processes (Debian's package, installed
// by scripts/test-deps.ts) on free loopback ports, each with its own store directory under
// os.tmpdir(); a server can be killed with SIGKILL and started again on the same ports and store.
// Never the machine's own NATS server (port 4222).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';

export const NATS_SERVER = '/usr/sbin/nats-server';

/** A free TCP port on loopback (the OS picks it; released before the server binds it). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

interface Member {
  name: string;
  clientPort: number;
  routePort: number;
  config: string;
  proc?: Subprocess;
}

export class NatsCluster {
  private constructor(
    readonly dir: string,
    private readonly members: Member[],
  ) {}

  /** Client URLs of every server (for CLUSTER_NATS_URLS and clients). */
  get urls(): string[] {
    return this.members.map((m) => `nats://127.0.0.1:${m.clientPort}`);
  }

  static async start(size = 3): Promise<NatsCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'kb-nats-'));
    const members: Member[] = [];
    for (let i = 0; i < size; i++) members.push({ name: `n${i + 1}`, clientPort: await freePort(), routePort: await freePort(), config: '' });
    for (const m of members) {
      m.config = join(dir, `${m.name}.conf`);
      const routes = members.filter((o) => o !== m).map((o) => `"nats-route://127.0.0.1:${o.routePort}"`);
      writeFileSync(
        m.config,
        [
          `server_name: ${m.name}`,
          `listen: 127.0.0.1:${m.clientPort}`,
          `jetstream { store_dir: "${join(dir, m.name)}", max_memory_store: 64MB, max_file_store: 2GB }`,
          `cluster { name: kb-test, listen: 127.0.0.1:${m.routePort}, routes: [${routes.join(', ')}] }`,
        ].join('\n'),
      );
    }
    const cluster = new NatsCluster(dir, members);
    for (let i = 0; i < size; i++) cluster.startMember(i);
    await cluster.waitForJetStream();
    return cluster;
  }

  private startMember(i: number): void {
    const m = this.members[i]!;
    m.proc = Bun.spawn([NATS_SERVER, '-c', m.config], { stdout: 'ignore', stderr: 'ignore' });
  }

  /** Until JetStream answers through every server (a meta leader is elected). */
  async waitForJetStream(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const url of this.urls) {
      for (;;) {
        try {
          const nc = await connect({ servers: url, timeout: 1000 });
          try {
            await (await jetstreamManager(nc, { timeout: 2000 })).getAccountInfo();
            break;
          } finally {
            await nc.close();
          }
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`JetStream not ready at ${url}: ${(err as Error).message}`);
          await Bun.sleep(200);
        }
      }
    }
  }

  /** A client connection to the whole cluster. */
  connect(): Promise<NatsConnection> {
    return connect({ servers: this.urls, reconnectTimeWait: 200, maxReconnectAttempts: -1 });
  }

  /** SIGKILL one server (0-based); its store stays for a restart. */
  async kill(i: number): Promise<void> {
    const proc = this.members[i]!.proc;
    proc?.kill('SIGKILL');
    await proc?.exited;
  }

  /** Start a killed server again on its ports and store. */
  restart(i: number): void {
    this.startMember(i);
  }

  async stop(): Promise<void> {
    for (let i = 0; i < this.members.length; i++) await this.kill(i);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
