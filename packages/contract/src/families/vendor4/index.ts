/**
 * vendor4: text-to-image and image-to-image; one image per request, of the size the request resolves to.
 *
 * @since 0.1.0
 */
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { image } from "../../Outputs.js"
import * as Prices from "./prices.js"
import * as Requests from "./requests.js"

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

/** vendor4. */
export const vendor4 = Family.make({
  name: "vendor4",
  endpoints: [
    Family.endpoint({
      family: "vendor4",
      operation: "text-to-image",
      name: "vendor4TextToImage",
      mediaType: "image",
      request: Requests.Vendor4TextToImageRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs,
      estimateSeconds
    }),
    Family.endpoint({
      family: "vendor4",
      operation: "image-to-image",
      name: "vendor4ImageToImage",
      mediaType: "image",
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
  prices: Prices
})
