// Shared assertions for the HTTP API tests (real server over HTTP, see test/helpers/server.ts).
import { expect } from 'bun:test';
import { Value } from '@sinclair/typebox/value';
import { HybridResponse, SearchResponse } from '../../src/routes/search';
import type { ApiResponse } from '../helpers/server';

export const API = '/api/v1';
export const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A syntactically valid id of the given prefix that no server has issued. */
export const unknownId = (prefix: string) => `${prefix}_${'0'.repeat(12)}${'0'.repeat(4)}${'a'.repeat(12)}`;

/** ISO 8601 UTC with milliseconds, and a real instant (round-trips through Date). */
export function expectIsoMs(value: unknown): void {
  expect(typeof value).toBe('string');
  expect(value as string).toMatch(ISO_MS_UTC);
  expect(new Date(value as string).toISOString()).toBe(value as string);
}

/** The error envelope of decisions.md, with no stack trace, file path or library internals. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  const raw = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { success: false, error: { code } } });
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expect(res.headers.get('content-type') ?? '').toContain('application/json');
  expectNoLeak(raw);
  if (res.body.error.details !== undefined) {
    expect(Array.isArray(res.body.error.details)).toBe(true);
    for (const d of res.body.error.details) {
      expect(typeof d.path).toBe('string');
      expect(typeof d.message).toBe('string');
    }
  }
}

export function expectNoLeak(raw: string): void {
  expect(raw).not.toContain('/work');
  expect(raw).not.toContain('node_modules');
  // Stack frames (" at fn (file:1:2)", "    at file:1:2"). A bare " at " is not checked: validation
  // messages legitimately say "must be at most 256 characters".
  expect(raw).not.toMatch(/\bat \S+ \(|\bat \S+:\d+:\d+|\\n\s+at /);
  expect(raw).not.toMatch(/\.(ts|js|mjs):\d+/);
  expect(raw.toLowerCase()).not.toContain('"stack"');
}

/** The error names the field, in the message or in a detail's path/message. */
export function expectNamesField(res: ApiResponse, field: string): void {
  const text = [res.body.error.message, ...(res.body.error.details ?? []).flatMap((d: { path: string; message: string }) => [d.path, d.message])].join(' | ');
  expect(text).toContain(field);
}

export function expectValidation(res: ApiResponse, field?: string): void {
  expectError(res, 400, 'VALIDATION_ERROR');
  if (field) expectNamesField(res, field);
}

/**
 * A search answer matches its documented schema (the server does not re-check search answers on
 * the way out, for speed, so every search test checks them here).
 */
export function expectSearchAnswer(body: unknown, mode: 'full-text' | 'semantic' | 'hybrid'): void {
  const schema = mode === 'hybrid' ? HybridResponse : SearchResponse;
  const errors = [...Value.Errors(schema, body)].map((e) => `${e.path}: ${e.message}`);
  expect(errors).toEqual([]);
}
