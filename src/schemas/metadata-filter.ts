// The static type of a search's `metadataFilter`, which the typed client checks requests against.
// Types only, importing nothing: the client package carries this file's declarations as they are
// (scripts/build-client.ts). What the server accepts at run time is decided by checkFilter
// (src/schemas/common.ts), which names the path and the reason of anything that means nothing.

/** A value a metadata filter compares with. */
export type FilterScalar = string | number | boolean;

/**
 * Conditions on one key, all of which must hold. Ranges compare numbers with numbers and strings
 * with strings (ISO dates order as text); `$ne` and `$nin` also match items without the key.
 */
export interface FilterOperators {
  $eq?: FilterScalar;
  $ne?: FilterScalar;
  $gt?: number | string;
  $gte?: number | string;
  $lt?: number | string;
  $lte?: number | string;
  $in?: FilterScalar[];
  $nin?: FilterScalar[];
  $exists?: boolean;
}

/**
 * A search's `metadataFilter`: every key must hold; each key takes a value (equal, or an array
 * containing it), a list of values (any of them) or an operator object; `$and` and `$or` take lists
 * of filters. `{ year: { $gte: 2020 }, $or: [{ team: 'billing' }, { tags: { $in: ['faq'] } }] }`
 */
export type SearchMetadataFilter = { [key: string]: FilterScalar | FilterScalar[] | FilterOperators | SearchMetadataFilter[] };
