/**
 * vendor4: text-to-image and image-to-image; one image per request, of the size the request resolves to, billed per
 * image.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as InputMedia from "../../InputMedia.js"
import { image } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import * as Requests from "./requests.js"

/**
 * A price per image.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PerImagePrices = Schema.Struct({
  perImage: Pricing.Price.annotations({ description: "USD per image" })
}).annotations({ title: "PerImagePrices" })

const numberOr = (value: unknown) => typeof value === "number" ? value : undefined

const outputs = ({ input, model }: AnyGenerationRequest) =>
  Requests.isVendor4Model(model)
    ? [
      image(
        Requests.vendor4OutputSize(model, {
          size: typeof input["size"] === "string" ? input["size"] : undefined,
          width: numberOr(input["width"]),
          height: numberOr(input["height"])
        }),
        input["output_format"] === "jpeg" ? "jpeg" : "png"
      )
    ]
    : []

const estimateSeconds = ({ model }: AnyGenerationRequest) => model === "vendor4-3-0-t2i" ? 10 : 20

/**
 * vendor4.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor4 = Family.make({
  name: "vendor4",
  endpoints: [
    Family.endpoint("vendor4", "text-to-image", "image", "vendor4TextToImage", {
      request: Requests.Vendor4TextToImageRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs,
      estimateSeconds
    }),
    Family.endpoint("vendor4", "image-to-image", "image", "vendor4ImageToImage", {
      request: Requests.Vendor4ImageToImageRequest,
      example: () => ({ prompt: "in watercolour", image: Family.samples.image }),
      outputs,
      estimateSeconds,
      inputMedia: (model) =>
        InputMedia.images(
          model === "vendor4-5-0-lite"
            ? { ...Requests.inputImageRules, formats: Requests.imageFormats[model] }
            : Requests.inputImageRules,
          "image",
          "images"
        )
    })
  ],
  prices: {
    fields: Pricing.each(Requests.Vendor4TextToImageRequest.models, PerImagePrices),
    defaults: {
      "vendor4-5-0-lite": { perImage: 0.04 },
      "vendor4-4-5": { perImage: 0.04 },
      "vendor4-4-0": { perImage: 0.03 },
      "vendor4-3-0-t2i": { perImage: 0.03 }
    },
    price: (_endpoint, { model }, table) =>
      Requests.isVendor4Model(model)
        ? Pricing.micros(table[model].perImage)
        : Pricing.unpriceable(model, "not a vendor4 model")
  }
})
