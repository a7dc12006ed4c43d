// The command-line client (`bun run cli …`, `kb-search kb|ingest|search|export …` in the binary):
//
//   kb create <name> [--type TEXT_HIGH_QUALITY] [--description …] | kb list | kb delete <id> --yes | kb reembed <id> [--no-wait]
//   ingest <files or folders…> --kb <id> [--concurrency 4] [--no-wait]
//   import <kbId> <file.jsonl> [--batch 2000] [--batch-bytes 8388608] [--concurrency 2] [--skip-lines 0] [--no-wait]
//   search <query> --kb <id> [--mode hybrid|full-text|semantic] [--weight 0.5] [--filter key=value|JSON]… [--limit 10]
//          [--min-score s] [--per-content n] [--context n] [--highlight] [--no-typos]
//   export --kb <id> [--out file.jsonl]
//
// Connection: --url / KB_URL (default http://localhost:3000), --org / KB_ORG, --key / KB_KEY.
// Exit codes: 0 done, 1 failed (the server's message is printed, never a stack trace), 2 usage.
import { createWriteStream } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { allPages, Api, CliError } from './api';
import { importFile } from './import';
import { ingest } from './ingest';
import { reembed } from './reembed';
import { contextBlock, hitsTable, table } from './table';

const KB_TYPES = ['TEXT_COST_EFFECTIVE', 'TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY'];

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

function weight(value: string): number {
  const n = Number(value);
  if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError('must be a number between 0 and 1');
  return n;
}

function finiteNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('must be a number');
  return n;
}

interface SearchOptions {
  kb: string;
  mode: string;
  weight?: number;
  filter?: FilterFlag[];
  limit: number;
  minScore?: number;
  perContent?: number;
  context?: number;
  highlight?: boolean;
  /** False with --no-typos. */
  typos: boolean;
}

/** One --filter: a key=value pair or a JSON filter object. */
type FilterFlag = { pair: [string, unknown] } | { object: Record<string, unknown> };

/**
 * `key=value` (true/false become booleans and numbers numbers, as metadata holds them), or a JSON
 * object as the API takes it (`{"year":{"$gte":2020}}`): anything beginning with `{`.
 */
function filterFlag(value: string, previous: FilterFlag[] = []): FilterFlag[] {
  if (value.trimStart().startsWith('{')) {
    let object: unknown;
    try {
      object = JSON.parse(value);
    } catch (err) {
      throw new InvalidArgumentError(`the JSON does not parse (${err instanceof Error ? err.message : String(err)}); expected key=value or a JSON object`);
    }
    if (typeof object !== 'object' || object === null || Array.isArray(object)) throw new InvalidArgumentError('expected key=value or a JSON object');
    return [...previous, { object: object as Record<string, unknown> }];
  }
  const at = value.indexOf('=');
  if (at < 1) throw new InvalidArgumentError('expected key=value or a JSON object such as {"year":{"$gte":2020}}');
  const raw = value.slice(at + 1);
  const parsed = raw === 'true' ? true : raw === 'false' ? false : raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw;
  return [...previous, { pair: [value.slice(0, at), parsed] }];
}

/**
 * The metadataFilter of several --filter flags, all of which must hold: the pairs as one object
 * (`{"team":"billing","year":2024}`), a JSON object as it is, and two or more of those under
 * `$and` (so does a key given twice as a pair: both must hold, neither replaces the other).
 */
export function combineFilters(flags: readonly FilterFlag[]): Record<string, unknown> | undefined {
  const pairs: Record<string, unknown> = {};
  const all: Record<string, unknown>[] = [];
  for (const flag of flags) {
    if ('object' in flag) all.push(flag.object);
    else if (Object.hasOwn(pairs, flag.pair[0])) all.push({ [flag.pair[0]]: flag.pair[1] });
    else pairs[flag.pair[0]] = flag.pair[1];
  }
  if (Object.keys(pairs).length > 0) all.unshift(pairs);
  return all.length === 0 ? undefined : all.length === 1 ? all[0] : { $and: all };
}

/** Neighbouring chunks on each side (the API's context.before and context.after, 0–10). */
function contextChunks(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 10) throw new InvalidArgumentError('must be an integer from 0 to 10');
  return n;
}

function connection(command: Command): Api {
  const { url, org, key } = command.optsWithGlobals() as { url: string; org?: string; key?: string };
  if (!org || !key) throw new CliError('the organization and its key are needed: --org and --key, or KB_ORG and KB_KEY', 2);
  return new Api({ url, org, key });
}

export function buildProgram(): Command {
  const program = new Command('kb-search')
    .description('Command-line client of a kb-search server')
    .addOption(new Option('--url <url>', 'server URL').env('KB_URL').default('http://localhost:3000'))
    .addOption(new Option('--org <id>', 'organization id').env('KB_ORG'))
    .addOption(new Option('--key <key>', 'API key of the organization').env('KB_KEY'))
    .showHelpAfterError()
    .exitOverride();

  const kb = program.command('kb').description('create, list and delete knowledge bases');
  kb.command('create <name>')
    .description('create a knowledge base; prints its id')
    .addOption(new Option('--type <type>', 'knowledge base type').choices(KB_TYPES).default('TEXT_HIGH_QUALITY'))
    .option('--description <text>', 'description')
    .action(async (name: string, opts: { type: string; description?: string }, command: Command) => {
      const { data } = await connection(command).call<{ id: string }>('POST', '/api/v1/knowledge-bases', {
        name,
        type: opts.type,
        ...(opts.description ? { description: opts.description } : {}),
      });
      console.log(data.id);
    });
  kb.command('list')
    .description('list the knowledge bases of the organization')
    .action(async (_opts: unknown, command: Command) => {
      const rows: string[][] = [];
      for await (const k of allPages<{ id: string; name: string; embeddingModel?: string; createdAt: string }>(connection(command), '/api/v1/knowledge-bases'))
        rows.push([k.id, k.name, k.embeddingModel ?? '', k.createdAt]);
      console.log(table(['id', 'name', 'model', 'created'], rows));
    });
  kb.command('reembed <id>')
    .description('re-embed with the model its type is served by now; searches answer from the current model until it is done')
    .option('--no-wait', 'do not wait for it to finish')
    .action(async (id: string, opts: { wait: boolean }, command: Command) => {
      process.exitCode = await reembed(connection(command), id, opts);
    });
  kb.command('delete <id>')
    .description('delete a knowledge base and everything in it')
    .option('--yes', 'confirm the deletion')
    .action(async (id: string, opts: { yes?: boolean }, command: Command) => {
      if (!opts.yes) throw new CliError(`deleting ${id} removes all its contents: add --yes to confirm`, 2);
      await connection(command).call('DELETE', `/api/v1/knowledge-bases/${encodeURIComponent(id)}`);
      console.log(`deleted ${id}`);
    });

  program
    .command('ingest <paths...>')
    .description('upload files and folders into a knowledge base, skipping content it already holds')
    .requiredOption('--kb <id>', 'knowledge base id')
    .option('--concurrency <n>', 'uploads at a time', positiveInt, 4)
    .option('--no-wait', 'do not wait for indexing to finish')
    .action(async (paths: string[], opts: { kb: string; concurrency: number; wait: boolean }, command: Command) => {
      process.exitCode = await ingest(connection(command), paths, opts);
    });

  program
    .command('import <kbId> <file>')
    .description('import a JSON Lines file (one {"text": …, "metadata": …} a line) in batches, each one durable write; a bad line stops it, naming the line')
    .option('--batch <n>', "lines per request (at most the server's MAX_IMPORT_LINES)", positiveInt, 2000)
    .option('--batch-bytes <n>', "bytes per request (at most the server's MAX_IMPORT_BYTES)", positiveInt, 8 * 1024 * 1024)
    .option('--concurrency <n>', 'requests at a time', positiveInt, 2)
    .option('--skip-lines <n>', 'start after this many lines of the file (to resume)', (v) => (v === '0' ? 0 : positiveInt(v)), 0)
    .option('--no-wait', 'do not wait for indexing to finish')
    .action(
      async (
        kbId: string,
        file: string,
        opts: { batch: number; batchBytes: number; concurrency: number; skipLines: number; wait: boolean },
        command: Command,
      ) => {
        process.exitCode = await importFile(connection(command), kbId, file, opts);
      },
    );

  program
    .command('search <query>')
    .description('search a knowledge base and print the hits as a table')
    .requiredOption('--kb <id>', 'knowledge base id')
    .addOption(new Option('--mode <mode>', 'search mode').choices(['hybrid', 'full-text', 'semantic']).default('hybrid'))
    .option('--weight <w>', 'semantic weight of hybrid search (0–1)', weight)
    .option(
      '--filter <filter>',
      'metadata filter: key=value, or a JSON object such as \'{"year":{"$gte":2020}}\' ($eq $ne $gt $gte $lt $lte $in $nin $exists $and $or); repeatable, all must hold',
      filterFlag,
    )
    .option('--limit <n>', 'number of hits (1–100)', positiveInt, 10)
    .option('--min-score <s>', "leave out hits scoring below (the mode's own score)", finiteNumber)
    .option('--per-content <n>', 'at most n hits of one content item', positiveInt)
    .option('--context <n>', 'show n neighbouring chunks before and after each hit (0–10)', contextChunks)
    .option('--highlight', 'show a snippet around the best match, matched words between «»')
    .option('--no-typos', 'match words exactly: no typo tolerance, the last word no prefix (full-text and hybrid)')
    .action(async (query: string, opts: SearchOptions, command: Command) => {
      if (opts.weight !== undefined && opts.mode !== 'hybrid') throw new CliError('--weight applies to --mode hybrid only', 2);
      const filter = combineFilters(opts.filter ?? []);
      const body = {
        query,
        limit: opts.limit,
        ...(filter ? { metadataFilter: filter } : {}),
        ...(opts.weight !== undefined ? { semanticWeight: opts.weight } : {}),
        ...(opts.minScore !== undefined ? { minScore: opts.minScore } : {}),
        ...(opts.perContent !== undefined ? { maxChunksPerContent: opts.perContent } : {}),
        ...(opts.context !== undefined ? { context: { before: opts.context, after: opts.context } } : {}),
        ...(opts.highlight ? { highlight: true } : {}),
        ...(opts.typos === false ? { typoTolerance: false } : {}),
      };
      const api = connection(command);
      const { data } = await api.call<Parameters<typeof hitsTable>[0] & Parameters<typeof contextBlock>[0]>(
        'POST',
        `/api/v1/knowledge-bases/${encodeURIComponent(opts.kb)}/search/${opts.mode}`,
        body,
      );
      console.log(data.length === 0 ? 'no hits' : hitsTable(data));
      if (opts.context && data.length > 0) console.log(`\n${contextBlock(data)}`);
      // Which model's vectors answered (semantic scores depend on it).
      if (opts.mode !== 'full-text') {
        const kb = (
          await api.call<{ embeddingModel: string; reembedding: { model: string; done: number; total: number } | null }>(
            'GET',
            `/api/v1/knowledge-bases/${encodeURIComponent(opts.kb)}`,
          )
        ).data;
        const moving = kb.reembedding ? ` (re-embedding with ${kb.reembedding.model}: ${kb.reembedding.done}/${kb.reembedding.total})` : '';
        console.error(`model: ${kb.embeddingModel}${moving}`);
      }
    });

  program
    .command('export')
    .description("write a knowledge base's contents as JSON Lines (one item a line, full text)")
    .requiredOption('--kb <id>', 'knowledge base id')
    .option('--out <file>', 'write to a file instead of standard output')
    .action(async (opts: { kb: string; out?: string }, command: Command) => {
      const api = connection(command);
      const path = `/api/v1/knowledge-bases/${encodeURIComponent(opts.kb)}/contents`;
      const out = opts.out ? createWriteStream(opts.out) : process.stdout;
      let count = 0;
      for await (const listed of allPages<{ id: string; truncated?: boolean }>(api, path)) {
        // Lists cut long texts; such an item is read whole.
        const item = listed.truncated ? (await api.call<object>('GET', `${path}/${encodeURIComponent(listed.id)}`)).data : listed;
        const { truncated: _truncated, ...full } = item as { truncated?: boolean };
        out.write(`${JSON.stringify(full)}\n`);
        count++;
      }
      if (opts.out) {
        await new Promise<void>((done) => (out as ReturnType<typeof createWriteStream>).end(done));
        console.error(`${count} items written to ${opts.out}`);
      }
    });
  return program;
}

/** Run with the given arguments (after the program name); resolves with the exit code. */
export async function runCli(args: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(args, { from: 'user' });
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2; // help, version, or a usage error (already printed)
    if (err instanceof CliError) {
      console.error(`error: ${err.message}`);
      return err.exitCode;
    }
    console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

if (import.meta.main) process.exit(await runCli(Bun.argv.slice(2)));
