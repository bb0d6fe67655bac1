/**
 * `@mediagate/accounts`: accounts and API keys — authentication, key management without escalation, the admin API,
 * the first-start bootstrap and idempotent creation (decisions.md §2, §5, §9).
 *
 * @since 0.1.0
 */

/** The storage port of accounts and keys, and its memory implementation. */
export * as AccountStore from "./AccountStore.js"
/** The contract's `AdminService`. */
export * as AdminService from "./AdminService.js"
/** First start: the first account and its keys. */
export * as Bootstrap from "./Bootstrap.js"
/** Idempotency-Key handling with sealed stored answers. */
export * as Idempotency from "./Idempotency.js"
/** The contract's `KeyService` and the `lastUsedAt` buffer. */
export * as KeyService from "./KeyService.js"
/** Key generation, hashing and IP whitelists. */
export * as Keys from "./Keys.js"
/** Everything in memory. */
export * as MemoryAccounts from "./MemoryAccounts.js"
/** Everything on SQLite or PostgreSQL. */
export * as SqlAccounts from "./SqlAccounts.js"
/** The request counters of the rate limits on SQL (shared by every node on PostgreSQL). */
export * as SqlRateWindows from "./SqlRateWindows.js"
