// The typed client for TypeScript users: an Eden Treaty client over the server's own route types,
// so requests and answers are checked by the compiler against the same TypeBox schemas the server
// validates with. Import it as `kb-search/client` in this repository (package.json "exports"); elsewhere
// as the package `kb-search-client` that `bun run build:client` makes (scripts/build-client.ts).
import { treaty, type Treaty } from '@elysiajs/eden';
import type { App } from './app';

export type { FilterOperators, FilterScalar, SearchMetadataFilter } from './schemas/metadata-filter';

export interface ClientAuth {
  organizationId: string;
  apiKey: string;
}

/**
 * A client for the server at `baseUrl` ("http://localhost:3000"), sending the organization's key
 * with every request. Calls answer `{ data, error, status }`; `error.value` holds the error envelope.
 */
export function createClient(baseUrl: string, auth: ClientAuth): KbSearchClient {
  return treaty<App>(baseUrl, {
    headers: { 'x-service-organization-id': auth.organizationId, 'x-service-api-key': auth.apiKey },
  });
}

export type KbSearchClient = Treaty.Create<App>;
