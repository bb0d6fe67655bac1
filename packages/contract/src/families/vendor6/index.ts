/**
 * vendor6: image-to-image (`vendor6-2`): the long side is 1024, 2048 or 4096 px (1K, 2K, 4K) at the requested
 * aspect ratio (`auto` is square); billed per image by resolution (search is free).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { image, text } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import { Vendor6ImageToImageRequest } from "./requests.js"

/**
 * `vendor6-2`: per image by resolution (search is free).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor6Prices = Schema.Struct({
  perImage: Pricing.byKey(["1K", "2K", "4K"], "USD per image, by resolution")
}).annotations({ title: "Vendor6Prices" })

const longSides: Readonly<Record<string, number>> = { "1K": 1024, "2K": 2048, "4K": 4096 }

/**
 * The pixel size of a vendor6 image.
 *
 * @since 0.1.0
 * @category utils
 */
export const vendor6Size = (resolution: string, aspectRatio: string): { width: number; height: number } => {
  const long = longSides[resolution] ?? 1024
  const match = /^(\d+):(\d+)$/.exec(aspectRatio)
  const [w, h] = match === null ? [1, 1] : [Number(match[1]), Number(match[2])]
  const short = 8 * Math.round((long * Math.min(w, h)) / Math.max(w, h) / 8)
  return w >= h ? { width: long, height: short } : { width: short, height: long }
}

/**
 * vendor6.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor6 = Family.make({
  name: "vendor6",
  endpoints: [
    Family.endpoint("vendor6", "image-to-image", "image", "vendor6ImageToImage", {
      request: Vendor6ImageToImageRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [
        image(
          vendor6Size(text(input["resolution"], "1K"), text(input["aspect_ratio"], "auto")),
          input["output_format"] === "png" ? "png" : "jpeg"
        )
      ],
      estimateSeconds: () => 15,
      inputMedia: () => InputMedia.images(InputMedia.commonImage, "image_input")
    })
  ],
  prices: {
    fields: { "vendor6-2": Vendor6Prices },
    defaults: { "vendor6-2": { perImage: { "1K": 0.08, "2K": 0.12, "4K": 0.16 } } },
    price: (_endpoint, { input, model }, table) =>
      Pricing.micros(Pricing.pick(model, input, "resolution", table["vendor6-2"].perImage, "1K"))
  }
})
