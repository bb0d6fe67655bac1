/**
 * `@mediagate/contract`: the single source of truth of the Mediagate API.
 *
 * @since 0.1.0
 */

/** Address rules for URLs the service fetches or calls. */
export * as Address from "./Address.js"
/** Accounts and balances. */
export * as Account from "./Account.js"
/** The operator's views: account, task and delivery lists across accounts, the system status. */
export * as Admin from "./Admin.js"
/** The whole HttpApi. */
export * as Api from "./Api.js"
/** API keys and permissions. */
export * as ApiKey from "./ApiKey.js"
/** Families, endpoints, operations and models. */
export * as Catalog from "./Catalog.js"
/** Upstream channels (admin API). */
export * as Channel from "./Channel.js"
/** The typed client. */
export * as Client from "./Client.js"
/** Image data URIs. */
export * as DataUri from "./DataUri.js"
/** Success envelopes and pagination. */
export * as Envelope from "./Envelope.js"
/** API errors. */
export * as Errors from "./Errors.js"
/** Shared field Schemas. */
export * as Fields from "./Fields.js"
/** Request Schemas by endpoint. */
export * as Generation from "./Generation.js"
/** The account's ledger as the API shows it. */
export * as Ledger from "./Ledger.js"
/** The generation request builder and rule helpers. */
export * as GenerationRequest from "./GenerationRequest.js"
/** The metrics Mediagate records (names, units, labels, buckets). */
export * as Metrics from "./Metrics.js"
/** Money in USD and micro-dollars. */
export * as Money from "./Money.js"
/** The storage port of the request-rate limits. */
export * as RateLimit from "./RateLimit.js"
/** Authentication middleware tags and the principal. */
export * as Security from "./Security.js"
/** Tasks. */
export * as Task from "./Task.js"
/** Timestamps. */
export * as Timestamp from "./Timestamp.js"
/** Optional packages of features that are off by default: loaded when configured, a clear error when missing. */
export * as OptionalPackage from "./OptionalPackage.js"
/** The spans of Mediagate's own operations (no stack capture; none while the tracer is disabled). */
export * as Tracing from "./Tracing.js"
/** Decode failures as API messages. */
export * as ValidationMessage from "./ValidationMessage.js"
/** Voices. */
export * as Voice from "./Voice.js"
/** Webhooks. */
export * as Webhook from "./Webhook.js"
/** Webhook signing and receiver-side verification. */
export * as WebhookSignature from "./WebhookSignature.js"
/** The application ports (Tags) the HTTP layer calls. */
export * as Services from "./Services.js"
/** Minimal valid requests per endpoint and model. */
export * as Examples from "./Examples.js"
/** The shape of a family and its builders. */
export * as Family from "./Family.js"
/** The registry: every family. */
export * as Families from "./families/index.js"
/** The URL inputs an endpoint fetches as input media, and their rules. */
export * as InputMedia from "./InputMedia.js"
/** What a job produces. */
export * as Outputs from "./Outputs.js"
/** The building blocks of the price table, and the table of a registry. */
export * as Pricing from "./Pricing.js"
