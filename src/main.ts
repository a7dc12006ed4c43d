// Entry point of `bun run start` and of the compiled binary: `kb-search` serves the API,
// `kb-search admin …` manages organizations and keys (same as `bun run admin …`).
if (Bun.argv[2] === 'admin') await import('./admin');
else await import('./server');

export {};
