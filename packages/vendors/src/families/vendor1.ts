/**
 * vendor1: multimodal-video (`vendor1-2`), image-to-video and text-to-video (1.5 Pro, 1.0 Pro, Pro Fast, Lite).
 *
 * @since 0.1.0
 */
import type { Family } from "../Family.js"
import { lastFrame, seconds, text, video, videoSize } from "../Outputs.js"

/** vendor1. */
export const vendor1: Family = {
  family: "vendor1",
  endpoints: ["vendor1/multimodal-video", "vendor1/image-to-video", "vendor1/text-to-video"],
  defaultEstimateSeconds: (endpoint, { input }) =>
    (endpoint === "vendor1/multimodal-video" ? 90 : 60) + 4 * seconds(input["duration"], 5),
  outputs: (endpoint, { input }) => {
    const ratio = endpoint === "vendor1/multimodal-video" ? input["aspect_ratio"] : input["ratio"]
    const out = video(videoSize(text(input["resolution"], "720p"), text(ratio, "16:9")), seconds(input["duration"], 5))
    return input["return_last_frame"] === true ? [out, lastFrame(out)] : [out]
  }
}
