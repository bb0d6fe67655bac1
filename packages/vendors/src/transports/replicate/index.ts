/**
 * `replicate`: Replicate's predictions API (`ReplicateUpstream.ts`), `https://api.replicate.com` unless the channel
 * names another. Replicate calls back (signed webhooks) when a prediction ends; a lost submit's prediction is known
 * from that callback.
 *
 * @since 0.1.0
 */
import * as Replicate from "../../ReplicateUpstream.js"
import * as Transport from "../../Transport.js"

/**
 * The Replicate transport.
 *
 * @since 0.1.0
 * @category transports
 */
export const replicate = Transport.make({
  name: "replicate",
  summary: "Replicate's predictions",
  baseUrl: { default: "https://api.replicate.com" },
  apiKey: "required",
  mapping: true,
  workflows: false,
  callbacks: true,
  submitRecovery: "callback",
  build: Transport.fromContext(Replicate.make)
})
