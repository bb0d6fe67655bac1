/**
 * vendor4: text-to-image and image-to-image; one image per request, of the size the request resolves to.
 *
 * @since 0.1.0
 */
import { vendor4OutputSize, type Vendor4Model } from "@mediagate/contract/inputs/vendor4"
import type { Family } from "../Family.js"
import { image } from "../Outputs.js"

/** vendor4. */
export const vendor4: Family = {
  family: "vendor4",
  endpoints: ["vendor4/text-to-image", "vendor4/image-to-image"],
  defaultEstimateSeconds: (_endpoint, { model }) => model === "vendor4-3-0-t2i" ? 10 : 20,
  outputs: (_endpoint, { input, model }) => [
    image(
      vendor4OutputSize(model as Vendor4Model, input as Parameters<typeof vendor4OutputSize>[1]),
      input["output_format"] === "jpeg" ? "jpeg" : "png"
    )
  ]
}
