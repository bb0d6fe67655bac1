/**
 * `openai`: the OpenAI-compatible `/v1/images/generations` and `/v1/videos` that gateways expose
 * (`OpenAiUpstream.ts`). The API offers neither an idempotency key nor a lookup: after a lost submit the task waits,
 * then is submitted again.
 *
 * @since 0.1.0
 */
import * as OpenAi from "../../OpenAiUpstream.js"
import * as Transport from "../../Transport.js"

/**
 * The OpenAI-compatible transport.
 *
 * @since 0.1.0
 * @category transports
 */
export const openai = Transport.make({
  name: "openai",
  summary: "OpenAI-compatible image and video endpoints",
  baseUrl: "required",
  apiKey: "required",
  mapping: true,
  workflows: false,
  callbacks: false,
  submitRecovery: "wait",
  build: Transport.fromContext(OpenAi.make)
})
