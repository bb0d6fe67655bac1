/**
 * `fal`: fal's queue (`FalUpstream.ts`), `https://queue.fal.run` unless the channel names a compatible one. fal calls
 * back when a job ends (`fal_webhook`); its queue honours no idempotency key, so a lost submit's job is known from
 * that callback.
 *
 * @since 0.1.0
 */
import * as Fal from "../../FalUpstream.js"
import * as Transport from "../../Transport.js"

/**
 * The fal transport.
 *
 * @since 0.1.0
 * @category transports
 */
export const fal = Transport.make({
  name: "fal",
  summary: "fal's queue",
  baseUrl: { default: "https://queue.fal.run" },
  apiKey: "required",
  mapping: true,
  workflows: false,
  callbacks: true,
  submitRecovery: "callback",
  build: Transport.fromContext(Fal.make)
})
