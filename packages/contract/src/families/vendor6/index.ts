/**
 * vendor6: image-to-image (`vendor6-2`): the long side is 1024, 2048 or 4096 px (1K, 2K, 4K) at the requested
 * aspect ratio (`auto` is square).
 *
 * @since 0.1.0
 */
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { image, text } from "../../Outputs.js"
import * as Prices from "./prices.js"
import { Vendor6ImageToImageRequest } from "./requests.js"

const longSides: Readonly<Record<string, number>> = { "1K": 1024, "2K": 2048, "4K": 4096 }

/** The pixel size of a vendor6 image. */
export const vendor6Size = (resolution: string, aspectRatio: string): { width: number; height: number } => {
  const long = longSides[resolution] ?? 1024
  const match = /^(\d+):(\d+)$/.exec(aspectRatio)
  const [w, h] = match === null ? [1, 1] : [Number(match[1]), Number(match[2])]
  const short = 8 * Math.round((long * Math.min(w, h)) / Math.max(w, h) / 8)
  return w >= h ? { width: long, height: short } : { width: short, height: long }
}

/** vendor6. */
export const vendor6 = Family.make({
  name: "vendor6",
  endpoints: [
    Family.endpoint({
      family: "vendor6",
      operation: "image-to-image",
      name: "vendor6ImageToImage",
      mediaType: "image",
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
  prices: Prices
})
