// A real S3 API server for tests: s3rver on a free loopback port with its own directory.
import S3rver from 's3rver';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestS3 {
  port: number;
  bucket: string;
  env: Record<string, string>;
  /** The same store as options of the snapshot stores (snapshots/s3-store.ts), for tests that read it directly. */
  store: { endpoint: string; port: number; useSSL: false; accessKey: string; secretKey: string; region: string; bucket: string };
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

export async function startS3(port?: number): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), 'kb-s3-'));
  const bucket = 'kb-snapshots';
  const actualPort = port ?? (await freePort());
  const server = new S3rver({ port: actualPort, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket, configs: [] }] });
  await server.run();
  return {
    port: actualPort,
    bucket,
    env: s3Env(actualPort, bucket),
    store: { endpoint: '127.0.0.1', port: actualPort, useSSL: false, accessKey: 'S3RVER', secretKey: 'S3RVER', region: 'us-east-1', bucket },
    async stop() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Server settings for an S3 store at 127.0.0.1:`port` (s3rver's default credentials). */
export function s3Env(port: number, bucket = 'kb-snapshots'): Record<string, string> {
  return {
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
    S3_BUCKET: bucket,
    S3_ACCESS_KEY: 'S3RVER',
    S3_SECRET_KEY: 'S3RVER',
    S3_REGION: 'us-east-1',
    // s3rver has no multipart upload: send every object in one PUT.
    S3_PART_SIZE_MB: '1024',
  };
}
