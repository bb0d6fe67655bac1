/**
 * vendor10: a family that exists only in the tests, built like the shipped ones (a folder with `requests.ts` and this
 * module) to show that a registry with one more line serves it end to end. Billed per second by resolution.
 */
import { Family, Outputs, Pricing } from "@mediagate/contract"
import * as Schema from "effect/Schema"
import { Vendor10TextToVideoRequest } from "./requests.js"

/** Per second of output by resolution. */
export const Vendor10Prices = Schema.Struct({ perSecond: Pricing.perSecondBy(["480p", "720p"]) })

const fields = { "vendor10-a": Vendor10Prices, "vendor10-b": Vendor10Prices }
const isModel = (model: string): model is keyof typeof fields => Object.hasOwn(fields, model)

/** vendor10. */
export const vendor10 = Family.make({
  name: "vendor10",
  endpoints: [
    Family.endpoint("vendor10", "text-to-video", "video", "vendor10TextToVideo", {
      request: Vendor10TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [Outputs.videoOf(input, { resolution: "480p", ratio: "16:9", seconds: 4 })],
      estimateSeconds: ({ input }) => 10 + Outputs.seconds(input["duration"], 4)
    })
  ],
  prices: {
    fields,
    defaults: {
      "vendor10-a": { perSecond: { "480p": 0.01, "720p": 0.02 } },
      "vendor10-b": { perSecond: { "480p": 0.03, "720p": 0.05 } }
    },
    price: (_endpoint, request, table) =>
      isModel(request.model)
        ? Pricing.bySecond(request, table[request.model].perSecond, "480p", 4)
        : Pricing.unpriceable(request.model, "not a vendor10 model")
  }
})
