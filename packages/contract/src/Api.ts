/**
 * The whole HTTP API: every endpoint of the specification under `/api/v1` plus the extensions of decisions.md
 * (cancel, key list, deliveries, replay) and the operator API under `/admin/v1`.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as OpenApiJsonSchema from "@effect/platform/OpenApiJsonSchema"
import { AdminApi } from "./api/AdminApi.js"
import { ApiKeysApi } from "./api/ApiKeysApi.js"
import { BalanceApi } from "./api/BalanceApi.js"
import { ChannelsApi } from "./api/ChannelsApi.js"
import * as GenerationApi from "./api/GenerationApi.js"
import { TasksApi } from "./api/TasksApi.js"
import { VoicesApi } from "./api/VoicesApi.js"
import { WebhooksApi } from "./api/WebhooksApi.js"
import { ErrorEnvelope, InternalError } from "./Errors.js"
import { registry } from "./families/index.js"
import type * as Family from "./Family.js"
import { describeForGenerators, partOf } from "./internal/openApi.js"

export {
  /**
   * The answer of `GET /api/v1/tasks/{id}` (its success Schema, for a handler that encodes its answer itself).
   *
   * @since 0.1.0
   * @category schemas
   */
  TaskResponse
} from "./api/TasksApi.js"

/**
 * API version shown in the OpenAPI documents.
 *
 * @since 0.1.0
 * @category constants
 */
export const version = "1.0.0"

/**
 * The license shown in the OpenAPI documents (the project's).
 *
 * @since 0.1.0
 * @category constants
 */
export const license = { name: "MIT", url: "https://opensource.org/licenses/MIT" } as const

/**
 * The first segments of the public API's paths (`/api/v1/...`) and of the operator API's (`/admin/v1/...`).
 *
 * @since 0.1.0
 * @category constants
 */
export const publicPrefix = "/api/v1/"
/**
 * See {@link publicPrefix}.
 *
 * @since 0.1.0
 * @category constants
 */
export const adminPrefix = "/admin/v1/"

/** The error envelope as a self-contained JSON Schema (its definition, not a `$ref` into `$defs`). */
const errorEnvelopeJson = OpenApiJsonSchema.makeWithDefs(ErrorEnvelope, { defs: {}, topLevelReferenceStrategy: "skip" })

/**
 * The Mediagate HttpApi of a registry: every group, the generation group with one endpoint per registry endpoint.
 *
 * @since 0.1.0
 * @category api
 */
export const make = <const R extends Family.Registry>(registry: R) => {
  const api = HttpApi.make("mediagate")
    .add(GenerationApi.make(registry))
    .add(GenerationApi.estimates(registry))
    .add(TasksApi)
    .add(VoicesApi)
    .add(BalanceApi)
    .add(ApiKeysApi)
    .add(WebhooksApi)
    .prefix("/api/v1")
    .add(AdminApi)
    .add(ChannelsApi)
    // any endpoint may answer an unexpected failure (a defect) with INTERNAL_ERROR: declared so that clients (the
    // relay among them) read its envelope instead of failing to decode it
    .addError(InternalError.wire)
  return api
    .annotate(OpenApi.Title, "Mediagate API")
    .annotate(OpenApi.Version, version)
    .annotate(OpenApi.License, license)
    .annotate(
      OpenApi.Description,
      "Asynchronous media generation gateway. Generation requests answer at once with a task id; poll " +
        "GET /api/v1/tasks/{id} or receive a signed webhook. Every response is an envelope: " +
        "{ success: true, data } or { success: false, error: { code, message } }."
    )
    .annotate(OpenApi.Transform, (spec) => {
      // Decode failures never reach clients in the platform's own shape: the server answers them with the
      // VALIDATION_ERROR envelope, so the document says so.
      const schemas = spec.components.schemas
      if ("HttpApiDecodeError" in schemas) {
        schemas["HttpApiDecodeError"] = { ...errorEnvelopeJson, description: "VALIDATION_ERROR envelope" }
      }
      // every query parameter declared, request-body defaults optional for generators (internal/openApi.ts)
      return describeForGenerators(
        api,
        spec as { paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } }
      )
    })
}

/**
 * The Mediagate HttpApi of the registry.
 *
 * @since 0.1.0
 * @category api
 */
export class MediagateApi extends make(registry) {}

/**
 * The OpenAPI documents of an API built by {@link make}: one for the public API, one for the operator API.
 *
 * @since 0.1.0
 * @category api
 */
export interface Documents {
  /** Every `/api/v1` endpoint (served at `/api/v1/openapi.json`). */
  readonly public: OpenApi.OpenAPISpec
  /** Every `/admin/v1` endpoint (served at `/admin/v1/openapi.json`). */
  readonly admin: OpenApi.OpenAPISpec
}

/**
 * What the documents say besides the API's endpoints.
 *
 * @since 0.1.0
 * @category api
 */
export interface DocumentOptions {
  /**
   * The base URL the documents' paths are relative to (their `servers`), e.g. `https://media.example.com` or, for
   * an app mounted under a prefix, `https://example.com/media`; default `/` (the host the document is served from).
   */
  readonly serverUrl?: string | undefined
}

/**
 * The OpenAPI documents of an API built by {@link make} (e.g. {@link MediagateApi}): each holds its own endpoints
 * and only the schemas, security schemes and tags they use.
 *
 * @since 0.1.0
 * @category api
 */
export const documents = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>,
  options: DocumentOptions = {}
): Documents => {
  const whole = OpenApi.fromApi(api)
  const serverUrl = (options.serverUrl ?? "").replace(/\/+$/, "") || "/"
  return {
    public: partOf(whole, {
      prefix: publicPrefix,
      serverUrl,
      info: { title: whole.info.title, description: whole.info.description ?? "" }
    }),
    admin: partOf(whole, {
      prefix: adminPrefix,
      serverUrl,
      info: {
        title: "Mediagate admin API",
        description: "The operator API: accounts, their keys and credits, cross-account lists of tasks and " +
          "deliveries, system status and upstream channels. Enabled only when MEDIAGATE_ADMIN_TOKEN is set (else " +
          "every path answers 404 NOT_FOUND); every request sends `Authorization: Bearer <admin token>`. Every " +
          "response is an envelope: { success: true, data } or { success: false, error: { code, message } }."
      }
    })
  }
}
