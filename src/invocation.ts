// How a person runs each command here: `bun run admin …` from a checkout, `kb-search admin …`
// from the compiled binary. Help texts and hints name the form that works where they are shown.

/** True inside the binary made by `bun build --compile` (its modules live in Bun's embedded file system). */
export const COMPILED = import.meta.path.includes('$bunfs') || import.meta.path.includes('~BUN');

/** The words that run `tool` (the server when omitted): e.g. "bun run admin" or "kb-search admin". */
export function commandFor(tool?: 'admin' | 'models' | 'cli'): string {
  if (COMPILED) return tool === undefined || tool === 'cli' ? 'kb-search' : `kb-search ${tool}`;
  return tool === undefined ? 'bun run start' : `bun run ${tool}`;
}
