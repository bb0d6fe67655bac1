/**
 * Handlers of the generation endpoints, one per endpoint of the registry: permission check, then
 * `TaskService.create` with the validated, normalized request; and of their estimates (`TaskService.estimate`).
 *
 * @since 0.1.0
 */
import { Api, type Catalog, Families, Family, type Generation, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"
import { RateLimiter } from "../RateLimit.js"

/**
 * The key of a served endpoint as the ports type it. The ports list the keys of the registry; a server composed from
 * a larger registry (a test family) passes its other keys through as they are, and the engine stores a key as given.
 * The overload states that; no value is converted.
 */
function portKey(info: Family.Endpoint): Catalog.EndpointKey
function portKey(info: Family.Endpoint): string {
  return info.key
}

/** The principal of a request to `info` (or its estimate): the key may create its media, of its family. */
const permittedFor = (info: Family.Endpoint) =>
  Authorization.require(Authorization.createPermission(info.mediaType), info.family)

/**
 * The generation group of the API of `families` (served by `HttpApiBuilder.api(Api.make(families))`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFor = (families: Family.Registry) =>
  Envelope.group(Api.make(families), "generation", (handlers) =>
    Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const limiter = yield* RateLimiter
      const create = (info: Family.Endpoint) => {
        const permitted = permittedFor(info)
        const span = Tracing.span(`Generation.${info.name}`)
        return (request: {
          readonly payload: Generation.AnyGenerationRequest
          readonly headers: { readonly "idempotency-key"?: string }
        }) =>
          span(Effect.flatMap(permitted, (principal) =>
            Effect.zipRight(
              limiter.tasks(principal),
              tasks.create(principal, {
                endpoint: portKey(info),
                request: request.payload,
                idempotencyKey: request.headers["idempotency-key"]
              })
            )))
      }
      // Each `handle` leaves the others to handle; the last one, outside the fold, proves every one handled.
      const [last, ...others] = Family.endpointsOf(families)
      return others.reduce((all, info) => all.handle(info.name, create(info)), handlers).handle(last.name, create(last))
    }))

/**
 * The generation group of the registry.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = layerFor(Families.registry)

/**
 * The estimate group of the API of `families`: the permission of the request itself, then `TaskService.estimate`
 * with the validated, normalized request.
 *
 * @since 0.1.0
 * @category layers
 */
export const estimatesFor = (families: Family.Registry) =>
  Envelope.group(Api.make(families), "estimates", (handlers) =>
    Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const estimate = (info: Family.Endpoint) => {
        const permitted = permittedFor(info)
        const span = Tracing.span(`Estimates.${info.name}`)
        return (request: { readonly payload: Generation.AnyGenerationRequest }) =>
          span(Effect.flatMap(permitted, (principal) =>
            tasks.estimate(principal, { endpoint: portKey(info), request: request.payload })))
      }
      // as the generation group: the last `handle`, outside the fold, proves every one handled
      const [last, ...others] = Family.endpointsOf(families)
      return others.reduce((all, info) =>
        all.handle(info.name, estimate(info)), handlers).handle(
          last.name,
          estimate(last)
        )
    }))
