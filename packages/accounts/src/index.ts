/**
 * `@mediagate/accounts`: accounts and API keys — authentication, key management without escalation, the admin API,
 * the first-start bootstrap and idempotent creation (decisions.md §2, §5, §9).
 *
 * @since 0.1.0
 */

/** The storage port of accounts and keys, and its memory implementation. */
export * as AccountStore from "./AccountStore.js"
/**
 * The contract's `AdminService`.
 *
 * @since 0.1.0
 */
export * as AdminService from "./AdminService.js"
/**
 * First start: the first account and its keys.
 *
 * @since 0.1.0
 */
export * as Bootstrap from "./Bootstrap.js"
/**
 * Idempotency-Key handling with sealed stored answers.
 *
 * @since 0.1.0
 */
export * as Idempotency from "./Idempotency.js"
/**
 * The contract's `KeyService` and the `lastUsedAt` buffer.
 *
 * @since 0.1.0
 */
export * as KeyService from "./KeyService.js"
/**
 * Key generation, hashing and IP whitelists.
 *
 * @since 0.1.0
 */
export * as Keys from "./Keys.js"
/**
 * Everything in memory.
 *
 * @since 0.1.0
 */
export * as MemoryAccounts from "./MemoryAccounts.js"
/**
 * Everything on SQLite or PostgreSQL.
 *
 * @since 0.1.0
 */
export * as SqlAccounts from "./SqlAccounts.js"
/**
 * The request counters of the rate limits on SQL (shared by every node on PostgreSQL).
 *
 * @since 0.1.0
 */
export * as SqlRateWindows from "./SqlRateWindows.js"
