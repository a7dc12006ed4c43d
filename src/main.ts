// Entry point of `bun run start` and of the compiled binary: `kb-search` serves the API,
// `kb-search admin …` manages organizations and keys (same as `bun run admin …`), `kb-search models …`
// downloads and lists embedding models (same as `bun run models …`).
if (Bun.argv[2] === 'admin') await import('./admin');
else if (Bun.argv[2] === 'models') await import('./models');
else await import('./server');

export {};
