// Turns Elysia/TypeBox validation failures into the envelope's `details`, with messages a person
// can act on (the unknown field named, the expected type spelled out).
import { ApiError, type ErrorDetail } from '../errors';

interface TypeBoxIssue {
  path?: string;
  message?: string;
  summary?: string;
}

function describe(issue: TypeBoxIssue): ErrorDetail {
  const path = issue.path || '/';
  const field = path.slice(1).replaceAll('/', '.');
  if (issue.message === 'Unexpected property') return { path, message: `unknown field '${field}'` };
  if (issue.summary?.startsWith('Expected property') && issue.summary.includes('found: undefined')) {
    return { path, message: `'${field}' is required` };
  }
  return { path, message: issue.summary || issue.message || 'invalid value' };
}

export function validationError(error: { all?: TypeBoxIssue[] }, where: string): ApiError {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const issue of error.all ?? []) {
    const d = describe(issue);
    const key = `${d.path}:${d.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      details.push(d);
    }
  }
  const first = details[0];
  const message = first ? `Invalid ${where}: ${first.path === '/' ? first.message : `${first.path.slice(1)}: ${first.message}`}` : `Invalid ${where}`;
  return new ApiError('VALIDATION_ERROR', message, details);
}
