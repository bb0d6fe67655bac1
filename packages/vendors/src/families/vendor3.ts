/**
 * vendor3: text-to-video (`vendor3-3`, `vendor3-3_fast`), one 8-second 720p clip per request.
 *
 * @since 0.1.0
 */
import type { Family } from "../Family.js"
import { text, video, videoSize } from "../Outputs.js"

/** vendor3. */
export const vendor3: Family = {
  family: "vendor3",
  endpoints: ["vendor3/text-to-video"],
  defaultEstimateSeconds: (_endpoint, { model }) => model === "vendor3-3_fast" ? 45 : 90,
  outputs: (_endpoint, { input }) => [video(videoSize("720p", text(input["aspect_ratio"], "16:9")), 8)]
}
