// Entry point of `bun run start` and of the compiled binary: `kb-search` serves the API,
// `kb-search admin …` manages organizations and keys (same as `bun run admin …`), `kb-search models …`
// downloads and lists embedding models (same as `bun run models …`), and `kb-search kb|ingest|search|export …`
// is the command-line client (same as `bun run cli …`).
const CLI_COMMANDS = new Set(['kb', 'ingest', 'search', 'export', 'help', '--help']);
const command = Bun.argv[2];
if (command === 'admin') await import('./admin');
else if (command === 'models') await import('./models');
else if (command !== undefined && CLI_COMMANDS.has(command)) {
  const { runCli } = await import('./cli/main');
  process.exit(await runCli(Bun.argv.slice(2)));
} else await import('./start');

export {};
