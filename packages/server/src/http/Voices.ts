/**
 * Handler of `GET /api/v1/vendor9/voices` (`voices:read`).
 *
 * @since 0.1.0
 */
import { Api, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"

/**
 * The voices group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "voices", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Services.VoiceService
    return handlers.handle("list", ({ urlParams }) =>
      Authorization.require("voices:read").pipe(
        Effect.zipRight(catalog.list(urlParams.name)),
        Tracing.span("Voices.list")
      ))
  }))
