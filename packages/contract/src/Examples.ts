/**
 * A minimal valid generation request for every endpoint and model: documentation for clients, and the seed of
 * the table-driven tests of every package (HTTP, engine, end-to-end).
 *
 * @since 0.1.0
 */
import { type EndpointKey, endpoints, type ModelId } from "./Catalog.js"

const image = "https://example.com/frame.png"
const video = "https://example.com/clip.mp4"

/** The smallest valid `input` of an endpoint for a model. */
export const minimalInput = (endpoint: EndpointKey, model: ModelId): Record<string, unknown> => {
  switch (endpoint) {
    case "vendor1/multimodal-video":
      return { prompt: "a lighthouse at dawn" }
    case "vendor1/image-to-video":
      return { image, duration: model === "vendor1-1-5-pro" ? 5 : 4 }
    case "vendor1/text-to-video":
      return { prompt: "a lighthouse at dawn", duration: 5 }
    case "vendor2/image-to-video":
      return { image }
    case "vendor4/image-to-image":
      return { prompt: "in watercolour", image }
    case "vendor5/image-to-video":
      return { images: [image] }
    case "vendor8/image-to-video":
      return { prompt: "slow zoom in", image_urls: [image] }
    case "vendor8/video-to-video":
      return { prompt: "as an oil painting", video_urls: [video] }
    default:
      return { prompt: "a lighthouse at dawn" }
  }
}

/** One minimal request body per endpoint and model. */
export const minimalRequests: ReadonlyArray<{
  readonly endpoint: EndpointKey
  readonly model: ModelId
  readonly body: { readonly model: ModelId; readonly input: Record<string, unknown> }
}> = (Object.keys(endpoints) as Array<EndpointKey>).flatMap((endpoint) =>
  endpoints[endpoint].models.map((model: ModelId) => ({
    endpoint,
    model,
    body: { model, input: minimalInput(endpoint, model) }
  }))
)
