/**
 * vendor5: image-to-video and text-to-video (`vendor5q3-pro`, `vendor5q3-turbo`).
 *
 * @since 0.1.0
 */
import type { Family } from "../Family.js"
import { seconds, text, video, videoSize } from "../Outputs.js"

/** vendor5. */
export const vendor5: Family = {
  family: "vendor5",
  endpoints: ["vendor5/image-to-video", "vendor5/text-to-video"],
  defaultEstimateSeconds: (_endpoint, { input, model }) =>
    (model === "vendor5q3-turbo" ? 30 : 60) + 4 * seconds(input["duration"], 5),
  outputs: (_endpoint, { input }) => [
    video(videoSize(text(input["resolution"], "720p"), text(input["aspect_ratio"], "16:9")), seconds(input["duration"], 5))
  ]
}
