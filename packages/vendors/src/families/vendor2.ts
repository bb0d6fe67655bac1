/**
 * vendor2: image-to-video and text-to-video (`vendor2-v3`, `vendor2-v2-6`). The family has no resolution field:
 * `std` renders 720p, `pro` 1080p.
 *
 * @since 0.1.0
 */
import type { Family } from "../Family.js"
import { seconds, text, video, videoSize } from "../Outputs.js"

/** vendor2. */
export const vendor2: Family = {
  family: "vendor2",
  endpoints: ["vendor2/image-to-video", "vendor2/text-to-video"],
  defaultEstimateSeconds: (_endpoint, { input }) => 60 + 6 * seconds(input["duration"], 5),
  outputs: (_endpoint, { input }) => [
    video(
      videoSize(input["mode"] === "pro" ? "1080p" : "720p", text(input["aspect_ratio"], "16:9")),
      seconds(input["duration"], 5)
    )
  ]
}
