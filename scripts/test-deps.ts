// What the test suite needs from Debian besides Bun and node_modules, installed when missing, so
// the README's one test command works on a fresh machine (CI runs it on a clean clone).
import { existsSync } from 'node:fs';

interface SystemPackage {
  /** The program the tests run, by absolute path. */
  binary: string;
  /** The Debian package that installs it. */
  pkg: string;
  /** What needs it. */
  usedBy: string;
}

const NEEDED: SystemPackage[] = [
  { binary: '/usr/bin/chromium', pkg: 'chromium', usedBy: 'test/playground.test.ts (headless browser)' },
  { binary: '/usr/sbin/nats-server', pkg: 'nats-server', usedBy: 'the cluster tests (a JetStream cluster of three servers)' },
];

function run(cmd: string[]): void {
  console.log(`[test-deps] ${cmd.join(' ')}`);
  const result = Bun.spawnSync(cmd, { stdout: 'inherit', stderr: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.exitCode !== 0) throw new Error(`"${cmd.join(' ')}" exited with ${result.exitCode}`);
}

const missing = NEEDED.filter((p) => !existsSync(p.binary));
if (missing.length > 0) {
  const asRoot = process.getuid?.() === 0 ? [] : Bun.which('sudo') ? ['sudo'] : undefined;
  if (!asRoot || !Bun.which('apt-get')) {
    console.error(
      `[test-deps] missing ${missing.map((p) => `${p.binary} (Debian package ${p.pkg}, for ${p.usedBy})`).join(', ')}; install them with apt-get as root`,
    );
    process.exit(1);
  }
  try {
    run([...asRoot, 'apt-get', 'update']);
    run([...asRoot, 'apt-get', 'install', '-y', ...missing.map((p) => p.pkg)]);
  } catch (err) {
    console.error(`[test-deps] could not install ${missing.map((p) => p.pkg).join(', ')}: ${(err as Error).message}`);
    process.exit(1);
  }
  for (const p of missing) if (!existsSync(p.binary)) throw new Error(`[test-deps] ${p.pkg} installed but ${p.binary} is absent`);
}
