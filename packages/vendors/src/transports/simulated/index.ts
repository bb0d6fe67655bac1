/**
 * `simulated`: the built-in simulator (`Simulated.ts`), which renders the files a family declares. It runs in this
 * process: it takes no base URL, credentials or mapping, and no submit of it is ever uncertain.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SimulatedUpstream } from "../../Simulated.js"
import * as Transport from "../../Transport.js"

/**
 * The simulated transport.
 *
 * @since 0.1.0
 * @category transports
 */
export const simulated = Transport.make({
  name: "simulated",
  summary: "the built-in simulator",
  baseUrl: "none",
  apiKey: "none",
  mapping: false,
  workflows: false,
  callbacks: false,
  submitRecovery: "in-process",
  build: () => Effect.map(SimulatedUpstream, (upstream) => Option.some<Transport.Built>({ upstream }))
})
