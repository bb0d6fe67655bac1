/**
 * vendor7: text-to-video (`vendor7-imagine/text-to-video`); durations are strings (`"6"`, `"10"`, `"15"`).
 *
 * @since 0.1.0
 */
import type { Family } from "../Family.js"
import { seconds, text, video, videoSize } from "../Outputs.js"

/** vendor7. */
export const vendor7: Family = {
  family: "vendor7",
  endpoints: ["vendor7/text-to-video"],
  defaultEstimateSeconds: (_endpoint, { input }) => 40 + 4 * seconds(input["duration"], 6),
  outputs: (_endpoint, { input }) => [
    video(videoSize(text(input["resolution"], "720p"), text(input["aspect_ratio"], "16:9")), seconds(input["duration"], 6))
  ]
}
