/**
 * Handlers of the operator's upstream channels `/admin/v1/channels` (docs/channels.md): the `AdminChannels` port
 * answers them (validation, credentials never shown); the group's middleware asks for the admin token.
 *
 * @since 0.1.0
 */
import { Api, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Envelope from "../Envelope.js"

/**
 * The channels group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "channels", (handlers) =>
  Effect.gen(function*() {
    const channels = yield* Services.AdminChannels
    return handlers
      .handle("list", () => channels.list)
      .handle("create", ({ payload }) => channels.create(payload))
      .handle("usage", ({ urlParams }) => channels.usage(urlParams))
      .handle("get", ({ path }) => channels.get(path.id))
      .handle("update", ({ path, payload }) => channels.update(path.id, payload))
      .handle("delete", ({ path }) => channels.remove(path.id))
  }))
