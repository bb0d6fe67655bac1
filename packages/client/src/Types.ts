/**
 * Named request and response types of the API, taken from the generated contract types (`generated/api.ts`), so
 * they follow the contract's Schemas without Effect.
 *
 * @since 0.1.0
 */
import type { components, generationEndpoints, operations, operationTable } from "./generated/api.js"

/**
 * Every component schema of the `/api/v1` OpenAPI document.
 *
 * @since 0.1.0
 * @category models
 */
export type Schemas = components["schemas"]

/**
 * An operation id of `/api/v1` (`"tasks.list"`, `"generation.vendor3TextToVideo"`, …).
 *
 * @since 0.1.0
 * @category models
 */
export type OperationId = keyof typeof operationTable & keyof operations

/**
 * A generation endpoint by its path below `/api/v1/`, e.g. `"vendor3/text-to-video"`.
 *
 * @since 0.1.0
 * @category models
 */
export type Endpoint = keyof typeof generationEndpoints

/**
 * The JSON request body of an operation (`never` when it has none).
 *
 * @since 0.1.0
 * @category models
 */
export type RequestBody<K extends OperationId> = operations[K] extends
  { readonly requestBody: { readonly content: { readonly "application/json": infer B } } } ? B
  : operations[K] extends { readonly requestBody?: { readonly content: { readonly "application/json": infer B } } } ? B
  : never

/**
 * The query of an operation (an empty object when it takes none).
 *
 * @since 0.1.0
 * @category models
 */
export type Query<K extends OperationId> = operations[K]["parameters"] extends { readonly query?: infer Q } ?
  [Q] extends [undefined] ? {} : NonNullable<Q>
  : {}

type JsonOf<R> = R extends { readonly content: { readonly "application/json": infer C } } ? C : never

type Responses<K extends OperationId> = operations[K]["responses"]

/**
 * The success envelope of an operation (`{ success: true, data, pagination? }`).
 *
 * @since 0.1.0
 * @category models
 */
export type SuccessEnvelope<K extends OperationId> = JsonOf<Responses<K>[Extract<keyof Responses<K>, 200 | 201>]>

/**
 * What an operation answers: the envelope's `data`.
 *
 * @since 0.1.0
 * @category models
 */
export type Data<K extends OperationId> = SuccessEnvelope<K> extends { readonly data: infer D } ? D : never

type ErrorEnvelopes = {
  [K in OperationId]: JsonOf<Responses<K>[Exclude<keyof Responses<K>, 200 | 201>]>
}[OperationId]

/**
 * Every error code the API declares (`TASK_NOT_FOUND`, `RATE_LIMITED`, …).
 *
 * @since 0.1.0
 * @category errors
 */
export type ApiErrorCode = ErrorEnvelopes extends infer E ?
  E extends { readonly error: { readonly code: infer C } } ? C extends string ? string extends C ? never : C : never
  : never
  : never

/**
 * The request body of a generation endpoint: `{ model, input, webhookUrl?, metadata? }`.
 *
 * @since 0.1.0
 * @category models
 */
export type GenerationRequest<E extends Endpoint> = RequestBody<(typeof generationEndpoints)[E]>

/**
 * A task as `GET /api/v1/tasks/{id}` answers it.
 *
 * @since 0.1.0
 * @category models
 */
export type Task = Schemas["Task"]
/**
 * A task's state.
 *
 * @since 0.1.0
 * @category models
 */
export type TaskStatus = Schemas["TaskStatus"]
/**
 * An item of the task list.
 *
 * @since 0.1.0
 * @category models
 */
export type TaskSummary = Schemas["TaskSummary"]
/**
 * The answer of a generation request: the new task's id, status and estimate.
 *
 * @since 0.1.0
 * @category models
 */
export type CreationAck = Schemas["CreationAck"]
/**
 * The estimate of a generation request: its price for the key, its live price, its expected run time and the input
 * the task would run with.
 *
 * @since 0.1.0
 * @category models
 */
export type Estimate = Schemas["Estimate"]
/**
 * The answer of a retry: the new task.
 *
 * @since 0.1.0
 * @category models
 */
export type RetryAck = Schemas["RetryAck"]
/**
 * One output file of a succeeded task.
 *
 * @since 0.1.0
 * @category models
 */
export type ResultItem = Schemas["ResultItem"]
/**
 * The query of the task list (filters, `limit`, `cursor`).
 *
 * @since 0.1.0
 * @category models
 */
export type TaskListQuery = Query<"tasks.list">
/**
 * The filters of an account's event stream (`tasks.changes`): the list's, without its page.
 *
 * @since 0.1.0
 * @category models
 */
export type TaskEventsQuery = Query<"tasks.accountEvents">
/**
 * A page's paging fields.
 *
 * @since 0.1.0
 * @category models
 */
export type Pagination = Schemas["Pagination"]
/**
 * A page of a list.
 *
 * @since 0.1.0
 * @category models
 */
export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: Pagination
}
/**
 * A voice of `vendor9`.
 *
 * @since 0.1.0
 * @category models
 */
export type Voice = Schemas["Voice"]
/**
 * The account balance and billing settings.
 *
 * @since 0.1.0
 * @category models
 */
export type Balance = Schemas["Balance"]
/**
 * A stored API key (never the secret).
 *
 * @since 0.1.0
 * @category models
 */
export type ApiKey = Schemas["ApiKeyRecord"]
/**
 * A new API key, with the full key shown once.
 *
 * @since 0.1.0
 * @category models
 */
export type ApiKeyCreated = Schemas["ApiKeyCreated"]
/**
 * A registered webhook.
 *
 * @since 0.1.0
 * @category models
 */
export type Webhook = Schemas["WebhookRecord"]
/**
 * A new webhook, with its signing secret shown once.
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookCreated = Schemas["WebhookCreated"]
/**
 * A webhook delivery.
 *
 * @since 0.1.0
 * @category models
 */
export type Delivery = Schemas["Delivery"]
/**
 * A delivery as a webhook's delivery list gives it: with its attempts (status, duration, the start of each answer)
 * and its task.
 *
 * @since 0.1.0
 * @category models
 */
export type DeliveryWithAttempts = Schemas["DeliveryWithAttempts"]
/**
 * The outcome of a test event.
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookTestResult = Schemas["WebhookTestResult"]
/**
 * The body of every webhook delivery.
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookEvent = Schemas["WebhookEvent"]
/**
 * A deleted resource.
 *
 * @since 0.1.0
 * @category models
 */
export type Deleted = Schemas["Deleted"]
