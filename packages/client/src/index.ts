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
  type ClientOptions,
  defaultBaseUrl,
  type DownloadOptions,
  Mediagate,
  type RequestOptions,
  type RunOptions,
  type WaitOptions
} from "./Client.js"
export type { PollInterval } from "./internal/poll.js"
export { type ClientErrorCode, type ErrorCode, MediagateError, type MediagateErrorFields } from "./MediagateError.js"
export type * from "./Types.js"
export { defaultToleranceSeconds, type IncomingHeaders, type VerifyOptions, verifyWebhook } from "./Webhooks.js"
