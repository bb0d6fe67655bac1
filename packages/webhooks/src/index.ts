/**
 * `@mediagate/webhooks`: webhook registrations, durable signed deliveries from the engine's outbox, retries,
 * replay and the address-checked outbound connection.
 *
 * @since 0.1.0
 */

/** Fan-out from the outbox, the delivery worker, retry schedule and configuration. */
export * as Dispatcher from "./Dispatcher.js"
/**
 * The address-checked, DNS-pinned POST and the sender port.
 *
 * @since 0.1.0
 */
export * as Outbound from "./Outbound.js"
/**
 * The operators' view of deliveries and the backlog (the contract's `AdminWebhooks`).
 *
 * @since 0.1.0
 */
export * as WebhookAdmin from "./WebhookAdmin.js"
/**
 * The contract's `WebhookService` implementation.
 *
 * @since 0.1.0
 */
export * as WebhookService from "./WebhookService.js"
/**
 * Webhook storage on SQLite and PostgreSQL.
 *
 * @since 0.1.0
 */
export * as SqlWebhookStore from "./SqlWebhookStore.js"
/**
 * The webhook storage port and its memory implementation.
 *
 * @since 0.1.0
 */
export * as WebhookStore from "./WebhookStore.js"
