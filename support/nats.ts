// A real NATS JetStream cluster for tests: three nats-server processes (Debian's package, installed
// by scripts/test-deps.ts) on free loopback ports, each with its own store directory under
// os.tmpdir(); a server can be killed with SIGKILL and started again on the same ports and store.
// Never the machine's own NATS server (port 4222).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';

export const NATS_SERVER = '/usr/sbin/nats-server';

/** `n` distinct free TCP ports on loopback (all held at once while the OS picks them, then released). */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const srv = createServer();
          srv.once('error', reject);
          srv.listen(0, '127.0.0.1', () => resolve(srv));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

export interface NatsClusterOptions {
  /** Lines added to every server's configuration (an `authorization` or `tls` block). */
  config?: string;
  /** What the helper's own clients connect with (credentials, TLS) to servers configured so. */
  connect?: Partial<NodeConnectionOptions>;
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
    private readonly options: NatsClusterOptions = {},
  ) {}

  /** Client URLs of every server (for CLUSTER_NATS_URLS and clients). */
  get urls(): string[] {
    return this.members.map((m) => `nats://127.0.0.1:${m.clientPort}`);
  }

  /** Start `size` clustered servers; again on other ports when one dies at start (a port taken meanwhile). */
  static async start(size = 3, options: NatsClusterOptions = {}): Promise<NatsCluster> {
    for (let attempt = 1; ; attempt++) {
      const cluster = await NatsCluster.startOnce(size, options);
      try {
        await cluster.waitForJetStream();
        return cluster;
      } catch (err) {
        const died = cluster.members.filter((m) => m.proc?.exitCode !== null && m.proc?.exitCode !== undefined);
        await cluster.stop();
        if (died.length === 0 || attempt >= 3) throw err;
      }
    }
  }

  private static async startOnce(size: number, options: NatsClusterOptions): Promise<NatsCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'kb-nats-'));
    const members: Member[] = [];
    const ports = await freePorts(2 * size);
    for (let i = 0; i < size; i++) members.push({ name: `n${i + 1}`, clientPort: ports[2 * i]!, routePort: ports[2 * i + 1]!, config: '' });
    for (const m of members) {
      m.config = join(dir, `${m.name}.conf`);
      const routes = members.filter((o) => o !== m).map((o) => `"nats-route://127.0.0.1:${o.routePort}"`);
      writeFileSync(
        m.config,
        [
          `server_name: ${m.name}`,
          `listen: 127.0.0.1:${m.clientPort}`,
          `jetstream { store_dir: "${join(dir, m.name)}", max_memory_store: 64MB, max_file_store: 2GB }`,
          // One server runs JetStream on its own (a cluster block of one makes it refuse to start).
          size > 1 ? `cluster { name: kb-test, listen: 127.0.0.1:${m.routePort}, routes: [${routes.join(', ')}] }` : '',
          options.config ?? '',
        ].join('\n'),
      );
    }
    const cluster = new NatsCluster(dir, members, options);
    for (let i = 0; i < size; i++) cluster.startMember(i);
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
          const nc = await connect({ servers: url, timeout: 1000, ...this.options.connect });
          try {
            await (await jetstreamManager(nc, { timeout: 2000 })).getAccountInfo();
            break;
          } finally {
            await nc.close();
          }
        } catch (err) {
          const dead = this.members.find((m) => m.proc && m.proc.exitCode !== null);
          if (dead) throw new Error(`nats-server ${dead.name} exited with ${dead.proc!.exitCode}`);
          if (Date.now() > deadline) throw new Error(`JetStream not ready at ${url}: ${(err as Error).message}`);
          await Bun.sleep(200);
        }
      }
    }
  }

  /** A client connection to the whole cluster. */
  connect(): Promise<NatsConnection> {
    return connect({ servers: this.urls, reconnectTimeWait: 200, maxReconnectAttempts: -1, ...this.options.connect });
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
