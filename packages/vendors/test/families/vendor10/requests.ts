/**
 * vendor10 (test-only) request Schemas: text-to-video on `vendor10-a` (2 to 10 s, loops) and `vendor10-b` (2 to 6 s).
 */
import { Fields, GenerationRequest } from "@mediagate/contract"

/** `POST /api/v1/vendor10/text-to-video`. */
export const Vendor10TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor10TextToVideoRequest",
  description: "Text to a 2 to 10 s video (vendor10-b: at most 6 s)",
  models: ["vendor10-a", "vendor10-b"],
  input: {
    prompt: Fields.prompt(1000),
    duration: Fields.optional(Fields.integer(2, 10).annotations({ default: 4 })),
    resolution: Fields.optional(Fields.oneOf("480p", "720p").annotations({ default: "480p" })),
    loop: Fields.optional(Fields.boolean)
  },
  rules: (body) => [
    ...(body.model === "vendor10-b" ? GenerationRequest.integerFor(body, "duration", 2, 6) : []),
    ...GenerationRequest.onlyFor(body, "loop", ["vendor10-a"])
  ],
  normalize: ({ input }) => GenerationRequest.withDefaults(input, { duration: 4, resolution: "480p" })
})
