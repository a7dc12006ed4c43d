import { expect, test } from 'bun:test';
import { routeLabel } from '../../src/http/serve';

test('route labels replace path parameters and fold unknown paths', () => {
  expect(routeLabel('/api/v1/knowledge-bases')).toBe('/api/v1/knowledge-bases');
  expect(routeLabel('/api/v1/knowledge-bases/kb_01a1ffed694e00003ee02bd3b4bc/contents/ct_x')).toBe('/api/v1/knowledge-bases/:id/contents/:contentId');
  expect(routeLabel('/api/v1/knowledge-bases/anything/search/hybrid')).toBe('/api/v1/knowledge-bases/:id/search/hybrid');
  expect(routeLabel('/api/v1/knowledge-bases/x/contents/file')).toBe('/api/v1/knowledge-bases/:id/contents/file');
  expect(routeLabel('/ready')).toBe('/ready');
  expect(routeLabel('/wp-admin/x.php')).toBe('(other)');
});
