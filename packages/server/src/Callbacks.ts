/**
 * `POST /callbacks/v1/{channel}/{task}`: upstream completion callbacks (fal's `fal_webhook`, Replicate's `webhook`;
 * docs/channels.md, "Callbacks"). A raw route next to the HttpApi, registered on the direct path too (one callback
 * per finished job; `internal/directPath.ts`): the body is read raw (an upstream's signature is
 * over its exact bytes, at most 1 MiB) and handed with the headers to the `UpstreamCallbacks` port, which checks the
 * callback URL's signature and the upstream's own and wakes the task for a poll. Answers: 200 when accepted, 401
 * `AUTH_INVALID_TOKEN` for a signature that does not hold, 404 `CHANNEL_NOT_FOUND` for an unknown channel (or when
 * the server has no callbacks at all), 413 for a larger body. A callback never completes a task: the poll it causes
 * does, so a forged one can at most make a task polled early.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { errorResponseFor, type ExtraRoute } from "./Envelope.js"
import * as DirectPath from "./internal/directPath.js"

/**
 * The path of the route.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/callbacks/v1/:channel/:task"

/**
 * The route's entries for the envelope middleware's 404/405 table.
 *
 * @since 0.1.0
 * @category routing
 */
export const routes: ReadonlyArray<ExtraRoute> = [{ method: "POST", path }]

/** Largest callback body read. */
const maxBodyBytes = 1024 * 1024

/**
 * The handler of `POST /callbacks/v1/{channel}/{task}` (without the port: every callback answers 404).
 *
 * @since 0.1.0
 * @category routing
 */
export const handler = (callbacks: Option.Option<Services.UpstreamCallbacks["Type"]>) =>
  Effect.flatMap(
    Effect.zip(HttpServerRequest.HttpServerRequest, HttpRouter.params),
    ([request, params]) => answer(callbacks, request, params)
  )

/** The answer to one callback request, given its path parameters. */
const answer = (
  callbacks: Option.Option<Services.UpstreamCallbacks["Type"]>,
  request: HttpServerRequest.HttpServerRequest,
  params: Readonly<Record<string, string | undefined>>
) =>
  Effect.gen(function*() {
    const channelId = params["channel"] ?? ""
    if (Option.isNone(callbacks)) {
      return errorResponseFor(request, 404, "CHANNEL_NOT_FOUND", `channel ${channelId} not found`)
    }
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBodyBytes) {
      return errorResponseFor(request, 413, "PAYLOAD_TOO_LARGE", "a callback body is at most 1 MiB")
    }
    const body = yield* request.text.pipe(Effect.orElseSucceed(() => ""))
    if (Buffer.byteLength(body) > maxBodyBytes) {
      return errorResponseFor(request, 413, "PAYLOAD_TOO_LARGE", "a callback body is at most 1 MiB")
    }
    const search = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
    const outcome = yield* callbacks.value.receive({
      channelId,
      taskId: params["task"] ?? "",
      expires: search.get("expires") ?? undefined,
      signature: search.get("signature") ?? undefined,
      body,
      headers: request.headers
    })
    switch (outcome) {
      case "accepted":
        return yield* HttpServerResponse.json({ success: true, data: { accepted: true } })
      case "refused":
        return errorResponseFor(request, 401, "AUTH_INVALID_TOKEN", "the callback's signature does not hold")
      case "unknown":
        return errorResponseFor(request, 404, "CHANNEL_NOT_FOUND", `channel ${channelId} not found`)
    }
  })

/**
 * The route, added to the HttpApi's router (the port is optional: without it every callback answers 404).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const callbacks = yield* Effect.serviceOption(Services.UpstreamCallbacks)
    // served on the direct path too (a callback per finished job: the platform's router costs it twice the work)
    const registry = yield* Effect.serviceOption(DirectPath.Dispatcher)
    if (Option.isSome(registry)) {
      registry.value.add("POST", path, (request, params) => answer(callbacks, request, params))
    }
    yield* router.post(path, handler(callbacks))
  })
)
