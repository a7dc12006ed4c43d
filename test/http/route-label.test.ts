import { expect, test } from 'bun:test';
import { RouteTable, UNMATCHED } from '../../src/http/methods';

const table = new RouteTable([
  { method: 'GET', path: '/ready' },
  { method: 'GET', path: '/docs/assets/swagger-ui.css' },
  { method: 'GET', path: '/api/v1/knowledge-bases' },
  { method: 'POST', path: '/api/v1/knowledge-bases' },
  { method: 'GET', path: '/api/v1/knowledge-bases/:id' },
  { method: 'GET', path: '/api/v1/knowledge-bases/:id/contents/:contentId' },
  { method: 'POST', path: '/api/v1/knowledge-bases/:id/contents/file' },
  { method: 'POST', path: '/api/v1/knowledge-bases/:id/search/hybrid' },
]);

test('a request is labelled by the template of the route it falls under', () => {
  expect(table.template('GET', '/api/v1/knowledge-bases')).toBe('/api/v1/knowledge-bases');
  expect(table.template('GET', '/api/v1/knowledge-bases/kb_01a1ffed694e00003ee02bd3b4bc/contents/ct_x')).toBe(
    '/api/v1/knowledge-bases/:id/contents/:contentId',
  );
  expect(table.template('POST', '/api/v1/knowledge-bases/anything/search/hybrid')).toBe('/api/v1/knowledge-bases/:id/search/hybrid');
  // The static segment wins over the parameter for its method, as in the router.
  expect(table.template('POST', '/api/v1/knowledge-bases/x/contents/file')).toBe('/api/v1/knowledge-bases/:id/contents/file');
  expect(table.template('GET', '/api/v1/knowledge-bases/x/contents/file')).toBe('/api/v1/knowledge-bases/:id/contents/:contentId');
  expect(table.template('HEAD', '/ready')).toBe('/ready');
  // A method the path does not answer to (405) keeps the path's template.
  expect(table.template('DELETE', '/ready')).toBe('/ready');
});

test('every path no route answers shares one label', () => {
  for (const path of ['/wp-admin/x.php', '/api/xxx1', '/api/v1', '/docs/nothing', '/health/x', '/ready/', '/api/v1/knowledge-bases/a/b/c/d']) {
    expect(table.template('GET', path)).toBe(UNMATCHED);
  }
});
