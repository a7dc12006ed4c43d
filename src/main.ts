// Entry point of `bun run start` and of the compiled binary: `kb-search` (or `kb-search serve`)
// serves the API, `kb-search admin …` manages organizations and keys (same as `bun run admin …`),
// `kb-search models …` downloads and lists embedding models (same as `bun run models …`), and
// `kb-search kb|ingest|import|search|export …` is the command-line client (same as `bun run cli …`).
// `--help` lists all of them; a word that is none of them is an error (exit 2), never a server.
import { COMPILED, commandFor } from './invocation';

const CLI_COMMANDS = new Set(['kb', 'ingest', 'import', 'search', 'export']);
const HELP = new Set(['help', '--help', '-h']);

function usage(): string {
  const me = COMPILED ? 'kb-search' : 'bun src/main.ts';
  return `usage: ${me} [command]

server
  ${me}                      serve the API (${COMPILED ? 'same as kb-search serve' : 'same as bun run start'}); settings from the environment (README: Configuration)
  ${me} serve

organizations and keys
  ${commandFor('admin')} org create --name <name> | org list | key issue --org <orgId> [--label <l>] | key list | key revoke <keyId>

embedding models
  ${commandFor('models')} pull <org/name> [--dtype fp32|int8|all] | list

client of a running server (--url, --org, --key or KB_URL, KB_ORG, KB_KEY)
  ${commandFor('cli')} kb create|list|delete|reembed …
  ${commandFor('cli')} ingest <files or folders…> --kb <id>
  ${commandFor('cli')} import <kbId> <file.jsonl>   (one JSON object a line: { text, metadata })
  ${commandFor('cli')} search <query> --kb <id> [--mode hybrid|full-text|semantic] [--highlight]
  ${commandFor('cli')} export --kb <id> [--out file.jsonl]
  ${commandFor('cli')} <command> --help   (options of each client command)`;
}

const command = Bun.argv[2];
if (command === 'admin') await import('./admin');
else if (command === 'models') await import('./models');
else if (command !== undefined && HELP.has(command)) {
  console.log(usage());
  process.exit(0);
} else if (command !== undefined && CLI_COMMANDS.has(command)) {
  const { runCli } = await import('./cli/main');
  process.exit(await runCli(Bun.argv.slice(2)));
} else if (command === undefined || command === 'serve') await import('./start');
else {
  console.error(`error: unknown command '${command}'\n\n${usage()}`);
  process.exit(2);
}
