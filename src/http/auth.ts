// Authentication of /api/v1 requests, decided in two places that cannot disagree:
// - the app's onRequest hook verifies the credential headers before anything else happens (no body
//   is read, no rate-limit token spent for a stranger), on the path the router matches (pathOf in
//   src/http/serve.ts is the router's own computation, see there);
// - every API route takes its organization from `orgContext`, which only knows organizations that
//   hook verified for this very request object, and answers 401 otherwise. So a request the hook
//   did not authenticate, for whatever reason, never reaches a handler.
import { Elysia } from 'elysia';
import { ApiError } from '../errors';
import type { KeyStore } from '../auth/key-store';

export const ORG_HEADER = 'x-service-organization-id';
export const KEY_HEADER = 'x-service-api-key';

const verified = new WeakMap<Request, string>();

/** Check the credential headers: the organization (remembered for this request) or a 401. */
export function authenticate(request: Request, keys: KeyStore): string | ApiError {
  const org = request.headers.get(ORG_HEADER);
  const key = request.headers.get(KEY_HEADER);
  if (!org || !key) return new ApiError('UNAUTHORIZED', `Both ${KEY_HEADER} and ${ORG_HEADER} headers are required`);
  if (!keys.verify(org, key)) return new ApiError('UNAUTHORIZED', 'The API key is not valid for this organization');
  verified.set(request, org);
  return org;
}

/** The organization verified for this request, if any. */
export function verifiedOrg(request: Request): string | undefined {
  return verified.get(request);
}

/** The authenticated organization of an API request; every /api/v1 route module uses this. */
export const orgContext = new Elysia({ name: 'org-context' }).derive({ as: 'scoped' }, ({ request }) => {
  const org = verified.get(request);
  if (org === undefined) throw new ApiError('UNAUTHORIZED', `Both ${KEY_HEADER} and ${ORG_HEADER} headers are required`);
  return { org };
});
