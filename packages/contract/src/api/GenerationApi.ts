/**
 * The generation endpoints (`POST /api/v1/<family>/<operation>`), one per endpoint of the registry.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { success } from "../Envelope.js"
import {
  IdempotencyKeyReused,
  InsufficientBalance,
  RateLimited,
  SpendLimitExceeded,
  ValidationError
} from "../Errors.js"
import { registry } from "../families/index.js"
import * as Family from "../Family.js"
import { CreationAck, Estimate } from "../Task.js"
import { authenticated, IdempotencyHeaders } from "./Common.js"

/**
 * `{ success: true, data: <creation acknowledgement> }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreationResponse = success(CreationAck, "CreationResponse")

/**
 * The HttpApi endpoint of one generation endpoint (its name, path and request Schema kept precise).
 *
 * @since 0.1.0
 * @category api
 */
export const endpoint = <const E extends Family.Endpoint>(info: E) => {
  const name: E["name"] = info.name
  const request: E["request"] = info.request
  return HttpApiEndpoint.post(name, info.path)
    .setPayload(request)
    .setHeaders(IdempotencyHeaders)
    .addSuccess(CreationResponse, { status: 201 })
    .addError(Schema.Union(
      ValidationError.wire,
      InsufficientBalance.wire,
      SpendLimitExceeded.wire,
      IdempotencyKeyReused.wire,
      RateLimited.wire
    ))
    .annotate(OpenApi.Summary, `${info.family} ${info.operation} (${info.models.join(", ")})`)
    .annotate(
      OpenApi.Description,
      `Creates a ${info.mediaType} task. Answers at once with the task id in status \`pending\`; ` +
        `the result arrives through GET /api/v1/tasks/{id} or a webhook.`
    )
}

/**
 * The HttpApi endpoints of a union of generation endpoints, one per member.
 *
 * @since 0.1.0
 * @category api
 */
export type EndpointOf<E> = E extends Family.Endpoint ? ReturnType<typeof endpoint<E>> : never

/** A group of one endpoint per generation endpoint of a registry (authenticated), each made by `make`. */
const perEndpoint = <const Id extends string, E extends HttpApiEndpoint.HttpApiEndpoint.Any>(
  id: Id,
  registry: Family.Registry,
  make: (info: Family.Endpoint) => E
) =>
  Family.endpointsOf(registry).reduce(
    (group: HttpApiGroup.HttpApiGroup<Id, E, never>, info) => group.add(make(info)),
    HttpApiGroup.make(id)
  ).pipe(authenticated)

/**
 * The generation group of a registry, its endpoints typed alike (as code that handles every one alike sees them).
 *
 * @since 0.1.0
 * @category api
 */
export const group = (registry: Family.Registry) =>
  perEndpoint("generation", registry, (info): EndpointOf<Family.Endpoint> => endpoint(info))
    .annotate(OpenApi.Title, "Generation")
    .annotate(OpenApi.Description, "Video and image generation requests, one endpoint per family and operation")

type AnyGroup = ReturnType<typeof group>

/**
 * The generation group of a registry with each endpoint typed (what the typed client reads).
 *
 * @since 0.1.0
 * @category api
 */
export type Group<R extends Family.Registry> = AnyGroup extends
  HttpApiGroup.HttpApiGroup<infer Id, infer _Endpoints, infer Error, infer Requirements, infer TopLevel>
  ? HttpApiGroup.HttpApiGroup<Id, EndpointOf<Family.EndpointOf<R>>, Error, Requirements, TopLevel>
  : never

/** The group holds an endpoint for every endpoint of the registry (its types follow from how it was built). */
const holdsEvery = <R extends Family.Registry>(
  group: { readonly endpoints: Readonly<Record<string, unknown>> },
  registry: R
): group is Group<R> => Family.endpointsOf(registry).every((info) => Object.hasOwn(group.endpoints, info.name))

/**
 * The generation group of a registry, every endpoint with its own name, path and request Schema.
 *
 * @since 0.1.0
 * @category api
 */
export const make = <const R extends Family.Registry>(registry: R): Group<R> => {
  const built = group(registry)
  if (holdsEvery(built, registry)) return built
  throw new Error("unreachable: an endpoint of the registry is missing from its group")
}

/**
 * The generation endpoints of the registry.
 *
 * @since 0.1.0
 * @category api
 */
export class GenerationApi extends make(registry) {}

/**
 * `{ success: true, data: <estimate> }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EstimateResponse = success(Estimate, "EstimateResponse")

/**
 * The estimate endpoint of one generation endpoint (`POST <path>/estimate`): the same request, checked the same way,
 * answered with its price and defaults instead of a task.
 *
 * @since 0.1.0
 * @category api
 */
export const estimateEndpoint = <const E extends Family.Endpoint>(info: E) => {
  const name: E["name"] = info.name
  const request: E["request"] = info.request
  return HttpApiEndpoint.post(name, `${info.path}/estimate`)
    .setPayload(request)
    .addSuccess(EstimateResponse)
    .addError(ValidationError.wire)
    .annotate(OpenApi.Summary, `Price of a ${info.family} ${info.operation} request, without making a task (extension)`)
    .annotate(
      OpenApi.Description,
      `Checks the request as \`POST /api/v1${info.path}\` does and answers what it would cost the calling key and ` +
        "the input the task would run with (the model's defaults filled in). Nothing is charged or stored. Needs " +
        "the same permission as the request itself."
    )
}

/**
 * The HttpApi estimate endpoints of a union of generation endpoints, one per member.
 *
 * @since 0.1.0
 * @category api
 */
export type EstimateEndpointOf<E> = E extends Family.Endpoint ? ReturnType<typeof estimateEndpoint<E>> : never

/**
 * The estimate group of a registry: one `POST <path>/estimate` per generation endpoint.
 *
 * @since 0.1.0
 * @category api
 */
export const estimates = (registry: Family.Registry) =>
  perEndpoint("estimates", registry, (info): EstimateEndpointOf<Family.Endpoint> => estimateEndpoint(info))
    .annotate(OpenApi.Title, "Estimates")
    .annotate(
      OpenApi.Description,
      "The price of a generation request before it is made, and the input it would run with (extension)"
    )
