// Preloaded by bunfig.toml: hooks for every test file. Its afterAll runs once each file is done,
// after the file's own (under --parallel each file gets this preload again, and the hook runs
// per file; run alone, once at the end).
import { afterAll } from 'bun:test';
import { removeTempDirs } from '../support/server';

// The data directories the file's servers used (support/server.ts tempDir).
afterAll(() => removeTempDirs());
