// Moved to support/random.ts (shared with the benchmarks, which import nothing from test/); this path stays for the tests.
export * from '../../support/random';
