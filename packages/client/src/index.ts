/**
 * `@mediagate/client`: the Mediagate API from plain JavaScript or TypeScript (Node 20+, Deno, Bun, browsers), with
 * no dependencies and no Effect in its API. Types come from the contract's OpenAPI document (`generated/api.ts`).
 *
 * ```ts
 * import { Mediagate } from "@mediagate/client"
 * const mg = new Mediagate({ apiKey: process.env.MG_KEY, baseUrl: "http://localhost:3000" })
 * const task = await mg.run("vendor3/text-to-video", { model: "vendor3-3_fast", input: { prompt: "a lighthouse" } })
 * ```
 *
 * @since 0.1.0
 */
export {
  /**
   * Options of {@link Mediagate}.
   *
   * @since 0.1.0
   * @category models
   */
  type ClientOptions,
  /**
   * The default base URL (the example server).
   *
   * @since 0.1.0
   * @category constants
   */
  defaultBaseUrl,
  /**
   * Options of `files.download`.
   *
   * @since 0.1.0
   * @category models
   */
  type DownloadOptions,
  /**
   * The Mediagate API client.
   *
   * @since 0.1.0
   * @category client
   */
  Mediagate,
  /**
   * Options of a call: `signal`, `timeout` (ms) and, on creating calls (`create`, `tasks.retry`, `apiKeys.create`,
   * `webhooks.create`), `idempotencyKey` (default: a new key per call, kept across the call's automatic retries).
   *
   * @since 0.1.0
   * @category models
   */
  type RequestOptions,
  /**
   * Options of {@link Mediagate.run}: those of {@link WaitOptions} plus the creation's `idempotencyKey`.
   *
   * @since 0.1.0
   * @category models
   */
  type RunOptions,
  /**
   * Options of `tasks.stream`: `signal`, `timeout` (ms) and `lastEventId` (resume after that state).
   *
   * @since 0.1.0
   * @category models
   */
  type StreamOptions,
  /**
   * Options of {@link Mediagate.waitFor}.
   *
   * @since 0.1.0
   * @category models
   */
  type WaitOptions
} from "./Client.js"
export type {
  /**
   * Bounds of the polling interval (ms).
   *
   * @since 0.1.0
   * @category models
   */
  PollInterval
} from "./internal/poll.js"
export {
  /**
   * Codes of failures that are not an API error envelope (`status` is then the HTTP status seen, or 0).
   *
   * @since 0.1.0
   * @category errors
   */
  type ClientErrorCode,
  /**
   * Every code a {@link MediagateError} carries: the API's codes, the client's own, and codes of newer servers.
   *
   * @since 0.1.0
   * @category errors
   */
  type ErrorCode,
  /**
   * A failed call. `code` is the API envelope's `error.code` or one of {@link ClientErrorCode}.
   *
   * @since 0.1.0
   * @category errors
   */
  MediagateError,
  /**
   * Fields of a {@link MediagateError}.
   *
   * @since 0.1.0
   * @category models
   */
  type MediagateErrorFields
} from "./MediagateError.js"
/**
 * Named request and response types of the API, taken from the generated contract types (`generated/api.ts`), so they
 * follow the contract's Schemas without Effect.
 *
 * @since 0.1.0
 */
export type * from "./Types.js"
export {
  /**
   * Receivers reject timestamps further than this from their clock (seconds).
   *
   * @since 0.1.0
   * @category webhooks
   */
  defaultToleranceSeconds,
  /**
   * Headers as a receiver sees them: a `Headers` object or a plain record (any case; arrays take their first value).
   *
   * @since 0.1.0
   * @category webhooks
   */
  type IncomingHeaders,
  /**
   * Options of {@link verifyWebhook}.
   *
   * @since 0.1.0
   * @category webhooks
   */
  type VerifyOptions,
  /**
   * Verifies a webhook delivery: `rawBody` exactly as received (before any JSON parsing), its headers and the webhook's
   * secret (`whsec_…`, shown when it was registered). Resolves with the parsed event; rejects with a {@link
   * MediagateError} whose code starts with `WEBHOOK_`.
   *
   * @since 0.1.0
   * @category webhooks
   */
  verifyWebhook
} from "./Webhooks.js"
