/**
 * `@mediagate/contract`: the single source of truth of the Mediagate API.
 *
 * @since 0.1.0
 */

/** Address rules for URLs the service fetches or calls. */
export * as Address from "./Address.js"
/**
 * Accounts and balances.
 *
 * @since 0.1.0
 */
export * as Account from "./Account.js"
/**
 * The operator's views: account, task and delivery lists across accounts, the system status.
 *
 * @since 0.1.0
 */
export * as Admin from "./Admin.js"
/**
 * The whole HttpApi.
 *
 * @since 0.1.0
 */
export * as Api from "./Api.js"
/**
 * API keys and permissions.
 *
 * @since 0.1.0
 */
export * as ApiKey from "./ApiKey.js"
/**
 * Families, endpoints, operations and models.
 *
 * @since 0.1.0
 */
export * as Catalog from "./Catalog.js"
/**
 * Upstream channels (admin API).
 *
 * @since 0.1.0
 */
export * as Channel from "./Channel.js"
/**
 * The typed client.
 *
 * @since 0.1.0
 */
export * as Client from "./Client.js"
/**
 * Image data URIs.
 *
 * @since 0.1.0
 */
export * as DataUri from "./DataUri.js"
/**
 * Success envelopes and pagination.
 *
 * @since 0.1.0
 */
export * as Envelope from "./Envelope.js"
/**
 * API errors.
 *
 * @since 0.1.0
 */
export * as Errors from "./Errors.js"
/**
 * Shared field Schemas.
 *
 * @since 0.1.0
 */
export * as Fields from "./Fields.js"
/**
 * Request Schemas by endpoint.
 *
 * @since 0.1.0
 */
export * as Generation from "./Generation.js"
/**
 * The account's ledger as the API shows it.
 *
 * @since 0.1.0
 */
export * as Ledger from "./Ledger.js"
/**
 * The generation request builder and rule helpers.
 *
 * @since 0.1.0
 */
export * as GenerationRequest from "./GenerationRequest.js"
/**
 * The metrics Mediagate records (names, units, labels, buckets).
 *
 * @since 0.1.0
 */
export * as Metrics from "./Metrics.js"
/**
 * Money in USD and micro-dollars.
 *
 * @since 0.1.0
 */
export * as Money from "./Money.js"
/**
 * The storage port of the request-rate limits.
 *
 * @since 0.1.0
 */
export * as RateLimit from "./RateLimit.js"
/**
 * Authentication middleware tags and the principal.
 *
 * @since 0.1.0
 */
export * as Security from "./Security.js"
/**
 * Tasks.
 *
 * @since 0.1.0
 */
export * as Task from "./Task.js"
/**
 * Timestamps.
 *
 * @since 0.1.0
 */
export * as Timestamp from "./Timestamp.js"
/**
 * Optional packages of features that are off by default: loaded when configured, a clear error when missing.
 *
 * @since 0.1.0
 */
export * as OptionalPackage from "./OptionalPackage.js"
/**
 * The spans of Mediagate's own operations (no stack capture; none while the tracer is disabled).
 *
 * @since 0.1.0
 */
export * as Tracing from "./Tracing.js"
/**
 * Decode failures as API messages.
 *
 * @since 0.1.0
 */
export * as ValidationMessage from "./ValidationMessage.js"
/**
 * Voices.
 *
 * @since 0.1.0
 */
export * as Voice from "./Voice.js"
/**
 * Webhooks.
 *
 * @since 0.1.0
 */
export * as Webhook from "./Webhook.js"
/**
 * Webhook signing and receiver-side verification.
 *
 * @since 0.1.0
 */
export * as WebhookSignature from "./WebhookSignature.js"
/**
 * The application ports (Tags) the HTTP layer calls.
 *
 * @since 0.1.0
 */
export * as Services from "./Services.js"
/**
 * Minimal valid requests per endpoint and model.
 *
 * @since 0.1.0
 */
export * as Examples from "./Examples.js"
/**
 * The shape of a family and its builders.
 *
 * @since 0.1.0
 */
export * as Family from "./Family.js"
/**
 * The registry: every family.
 *
 * @since 0.1.0
 */
export * as Families from "./families/index.js"
/**
 * The URL inputs an endpoint fetches as input media, and their rules.
 *
 * @since 0.1.0
 */
export * as InputMedia from "./InputMedia.js"
/**
 * What a job produces.
 *
 * @since 0.1.0
 */
export * as Outputs from "./Outputs.js"
/**
 * The building blocks of the price table, and the table of a registry.
 *
 * @since 0.1.0
 */
export * as Pricing from "./Pricing.js"
