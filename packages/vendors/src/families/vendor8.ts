/**
 * vendor8: text-to-video, image-to-video and video-to-video (2.6 models); 16:9, durations as strings.
 *
 * @since 0.1.0
 */
import type { Family } from "../Family.js"
import { seconds, text, video, videoSize } from "../Outputs.js"

/** vendor8. */
export const vendor8: Family = {
  family: "vendor8",
  endpoints: ["vendor8/text-to-video", "vendor8/image-to-video", "vendor8/video-to-video"],
  defaultEstimateSeconds: (_endpoint, { input }) => 60 + 5 * seconds(input["duration"], 5),
  outputs: (_endpoint, { input }) => [
    video(videoSize(text(input["resolution"], "1080p"), "16:9"), seconds(input["duration"], 5))
  ]
}
