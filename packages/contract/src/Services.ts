/**
 * The application ports the HTTP layer is built against. The server package calls them; the engine, billing,
 * accounts and webhook packages implement them; tests provide in-memory implementations.
 *
 * Every method is scoped to the calling principal's account: a resource of another account is reported exactly as
 * an unknown one. Storage failures surface as `ServiceUnavailable`; anything else unexpected is a defect.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { Account, AccountCreate, AccountUpdate, Balance, CreditRequest } from "./Account.js"
import type {
  AccountListQuery,
  AdminDelivery,
  AdminDeliveryListQuery,
  AdminTask,
  AdminTaskListQuery,
  AdminTaskSummary,
  EngineStatus,
  SystemStatus,
  WebhookBacklog
} from "./Admin.js"
import type { ApiKeyCreate, ApiKeyCreated, ApiKeyRecord } from "./ApiKey.js"
import type { Channel, ChannelCreate, ChannelUpdate, ChannelUsage, ChannelUsageQuery } from "./Channel.js"
import type { Deleted, Page } from "./Envelope.js"
import type * as Errors from "./Errors.js"
import type { GenerationCommand } from "./Generation.js"
import type { LedgerEntry, LedgerListQuery } from "./Ledger.js"
import type { Principal } from "./Security.js"
import type { CreationAck, Estimate, RetryAck, Task, TaskEventsQuery, TaskListQuery, TaskSummary } from "./Task.js"
import type { VoiceList } from "./Voice.js"
import type {
  Delivery,
  DeliveryListQuery,
  DeliveryWithAttempts,
  WebhookCreate,
  WebhookCreated,
  WebhookRecord,
  WebhookTestResult
} from "./Webhook.js"

type Unavailable = Errors.ServiceUnavailable
/**
 * The refusals of a task creation: billing's, an `Idempotency-Key` used with another request, and a test key's
 * account over its storage quota (`RATE_LIMITED`, docs/operations.md "Retention").
 */
type CreationRefused =
  | Errors.InsufficientBalance
  | Errors.SpendLimitExceeded
  | Errors.IdempotencyKeyReused
  | Errors.RateLimited

/**
 * A state of a task as its event stream sends it (`GET /api/v1/tasks/{id}/events`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskVersion {
  /**
   * The state's version: a fingerprint of the stored state that every node computes alike (the event's id, which a
   * client sends back as `Last-Event-ID`). Links signed anew do not change it.
   */
  readonly version: string
  readonly task: Task
  /** `succeeded`, `failed`, `cancelled` or `expired`: no later state follows. */
  readonly terminal: boolean
}

/**
 * A task being watched: its current state, and the states that follow it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskWatch {
  readonly current: TaskVersion
  /**
   * Each new state after `after`, read from the storage every `every` ms (every node reads the same states),
   * until a terminal one (sent, then the stream ends) or until the task is gone (retention: the stream ends).
   */
  readonly changes: (after: TaskVersion, every: number) => Stream.Stream<TaskVersion, Unavailable>
}

/**
 * A change of an account's task as its account's event stream sends it (`GET /api/v1/tasks/events`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskChange {
  /** The change's place: its time (epoch ms, the storage clock), `.`, the task id (the event's id). */
  readonly id: string
  /** The task as it is after the change. */
  readonly task: Task
}

/**
 * Accepting, reading, listing, retrying and cancelling tasks.
 *
 * @since 0.1.0
 * @category services
 */
export class TaskService extends Context.Tag("@mediagate/contract/TaskService")<TaskService, {
  /** Accepts a validated generation request: stores it as `pending` and charges it in one step. */
  readonly create: (
    principal: Principal,
    command: GenerationCommand
  ) => Effect.Effect<CreationAck, CreationRefused | Errors.ValidationError | Unavailable>
  /**
   * What a validated generation request would cost the principal and the input it would run with, without making
   * a task (nothing charged or stored).
   */
  readonly estimate: (
    principal: Principal,
    command: Pick<GenerationCommand, "endpoint" | "request">
  ) => Effect.Effect<Estimate, Unavailable>
  /** Reads a task of the principal's account. */
  readonly get: (principal: Principal, id: string) => Effect.Effect<Task, Errors.TaskNotFound | Unavailable>
  /** Watches a task of the principal's account: its state now, and the states that follow. */
  readonly watch: (principal: Principal, id: string) => Effect.Effect<TaskWatch, Errors.TaskNotFound | Unavailable>
  /**
   * The changes of the tasks of the principal's account and environment that pass `query`'s filters, oldest first,
   * read from the storage every `every` ms: from now on, or after the change `after` names (a `TaskChange` id).
   * The stream does not end by itself.
   */
  readonly changes: (
    principal: Principal,
    query: TaskEventsQuery,
    options: { readonly after?: string | undefined; readonly every: number }
  ) => Stream.Stream<TaskChange, Unavailable>
  /** Lists tasks of the principal's account, newest first. */
  readonly list: (
    principal: Principal,
    query: TaskListQuery
  ) => Effect.Effect<Page<TaskSummary>, Errors.ValidationError | Unavailable>
  /** Creates a new task from a `failed` or `expired` one (charged again). */
  readonly retry: (
    principal: Principal,
    id: string,
    idempotencyKey: string | undefined
  ) => Effect.Effect<RetryAck, Errors.TaskNotFound | Errors.TaskNotRetryable | CreationRefused | Unavailable>
  /** Cancels a `pending` or `queued` task (refunded). */
  readonly cancel: (
    principal: Principal,
    id: string
  ) => Effect.Effect<Task, Errors.TaskNotFound | Errors.TaskNotCancellable | Unavailable>
  /**
   * How many tasks are active (`pending`, `queued` or `running`) for the principal's account and for its key, for
   * the in-flight limits (security.md "Rate limits"). Read only when such a limit is set.
   */
  readonly inFlight: (principal: Principal) => Effect.Effect<{
    readonly account: number
    readonly key: number
  }, Unavailable>
  /** The provider of a task of the principal's account, for permission checks before a retry. */
  readonly providerOf: (principal: Principal, id: string) => Effect.Effect<
    Option.Option<{
      readonly provider: Task["provider"]
      readonly type: Task["type"]
    }>,
    Unavailable
  >
}>() {}

/**
 * The account balance.
 *
 * @since 0.1.0
 * @category services
 */
export class BillingService extends Context.Tag("@mediagate/contract/BillingService")<BillingService, {
  readonly balance: (principal: Principal) => Effect.Effect<Balance, Unavailable>
  /** The account's ledger, newest first (`GET /api/v1/balance/ledger`); a cursor of another list is refused. */
  readonly ledger: (
    principal: Principal,
    query: LedgerListQuery
  ) => Effect.Effect<Page<LedgerEntry>, Errors.ValidationError | Unavailable>
}>() {}

/**
 * Raw credentials of a request, as the HTTP layer saw them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Credentials {
  /** The `Authorization` header, if any. */
  readonly authorization: string | undefined
  /** The client address after trusted-proxy handling. */
  readonly clientAddress: string | undefined
}

/**
 * Authentication and key management.
 *
 * @since 0.1.0
 * @category services
 */
export class KeyService extends Context.Tag("@mediagate/contract/KeyService")<KeyService, {
  /**
   * Authenticates a request (decisions.md §5 order: header, shape/unknown, revoked, expired, IP). Route
   * permissions are checked by the caller.
   */
  readonly authenticate: (
    credentials: Credentials
  ) => Effect.Effect<
    Principal,
    | Errors.AuthRequired
    | Errors.AuthInvalidToken
    | Errors.KeyRevoked
    | Errors.AuthTokenExpired
    | Errors.KeyPermissionDenied
    | Unavailable
  >
  /** Creates a key within the caller's own rights (no escalation). */
  readonly create: (
    principal: Principal,
    body: ApiKeyCreate,
    idempotencyKey: string | undefined
  ) => Effect.Effect<
    ApiKeyCreated,
    Errors.ValidationError | Errors.KeyPermissionDenied | Errors.IdempotencyKeyReused | Unavailable
  >
  readonly list: (principal: Principal) => Effect.Effect<ReadonlyArray<ApiKeyRecord>, Unavailable>
  readonly revoke: (principal: Principal, id: string) => Effect.Effect<Deleted, Errors.ApiKeyNotFound | Unavailable>
}>() {}

/**
 * Configured webhooks and their deliveries.
 *
 * @since 0.1.0
 * @category services
 */
export class WebhookService extends Context.Tag("@mediagate/contract/WebhookService")<WebhookService, {
  readonly create: (
    principal: Principal,
    body: WebhookCreate,
    idempotencyKey: string | undefined
  ) => Effect.Effect<WebhookCreated, Errors.ValidationError | Errors.IdempotencyKeyReused | Unavailable>
  readonly list: (principal: Principal) => Effect.Effect<ReadonlyArray<WebhookRecord>, Unavailable>
  readonly remove: (principal: Principal, id: string) => Effect.Effect<Deleted, Errors.WebhookNotFound | Unavailable>
  /** Enables a webhook again (one that a `410 Gone` disabled); answers its record. */
  readonly enable: (
    principal: Principal,
    id: string
  ) => Effect.Effect<WebhookRecord, Errors.WebhookNotFound | Unavailable>
  readonly test: (
    principal: Principal,
    id: string
  ) => Effect.Effect<WebhookTestResult, Errors.WebhookNotFound | Unavailable>
  readonly deliveries: (
    principal: Principal,
    id: string,
    query: DeliveryListQuery
  ) => Effect.Effect<Page<DeliveryWithAttempts>, Errors.WebhookNotFound | Errors.ValidationError | Unavailable>
  readonly replay: (
    principal: Principal,
    id: string,
    deliveryId: string
  ) => Effect.Effect<Delivery, Errors.WebhookNotFound | Errors.DeliveryNotFound | Unavailable>
}>() {}

/**
 * The voice catalog of vendor9.
 *
 * @since 0.1.0
 * @category services
 */
export class VoiceService extends Context.Tag("@mediagate/contract/VoiceService")<VoiceService, {
  readonly list: (name: string | undefined) => Effect.Effect<VoiceList, Unavailable>
}>() {}

/**
 * The operator API.
 *
 * @since 0.1.0
 * @category services
 */
export class AdminService extends Context.Tag("@mediagate/contract/AdminService")<AdminService, {
  readonly createAccount: (body: AccountCreate) => Effect.Effect<Account, Errors.ValidationError | Unavailable>
  readonly getAccount: (id: string) => Effect.Effect<Account, Errors.AccountNotFound | Unavailable>
  readonly updateAccount: (
    id: string,
    body: AccountUpdate
  ) => Effect.Effect<Account, Errors.AccountNotFound | Errors.ValidationError | Unavailable>
  readonly credit: (
    id: string,
    body: CreditRequest
  ) => Effect.Effect<Account, Errors.AccountNotFound | Errors.ValidationError | Unavailable>
  readonly createKey: (
    accountId: string,
    body: ApiKeyCreate
  ) => Effect.Effect<ApiKeyCreated, Errors.AccountNotFound | Errors.ValidationError | Unavailable>
  /** Accounts with their balance, newest first; `search` is a case-insensitive prefix of the id or the name. */
  readonly listAccounts: (
    query: AccountListQuery
  ) => Effect.Effect<Page<Account>, Errors.ValidationError | Unavailable>
  /** The unrevoked keys of an account (never a secret). */
  readonly listKeys: (
    accountId: string
  ) => Effect.Effect<ReadonlyArray<ApiKeyRecord>, Errors.AccountNotFound | Unavailable>
  /** Revokes a key of any account and its descendants (as the account-side revoke). */
  readonly revokeKey: (id: string) => Effect.Effect<Deleted, Errors.ApiKeyNotFound | Unavailable>
  /** Tasks of every account (or of `account_id`), newest first. */
  readonly listTasks: (
    query: AdminTaskListQuery
  ) => Effect.Effect<Page<AdminTaskSummary>, Errors.ValidationError | Unavailable>
  /** A task of any account, with what the engine knows of it. */
  readonly getTask: (id: string) => Effect.Effect<AdminTask, Errors.TaskNotFound | Unavailable>
  /** Webhook deliveries of every account (or of `account_id`), newest first, with their attempt logs. */
  readonly listDeliveries: (
    query: AdminDeliveryListQuery
  ) => Effect.Effect<Page<AdminDelivery>, Errors.ValidationError | Unavailable>
  /** Tasks by state, queues, webhook backlog and worker nodes, from the database (every node answers the same). */
  readonly system: Effect.Effect<SystemStatus, Unavailable>
}>() {}

/**
 * The engine's side of the operator API (the engine implements it; the `AdminService` calls it): tasks across
 * accounts and the engine's status.
 *
 * @since 0.1.0
 * @category services
 */
export class AdminTasks extends Context.Tag("@mediagate/contract/AdminTasks")<AdminTasks, {
  readonly list: (
    query: AdminTaskListQuery
  ) => Effect.Effect<Page<AdminTaskSummary>, Errors.ValidationError | Unavailable>
  readonly get: (id: string) => Effect.Effect<AdminTask, Errors.TaskNotFound | Unavailable>
  /** Tasks by state, queues and the worker nodes (stale ones flagged). */
  readonly status: Effect.Effect<EngineStatus, Unavailable>
}>() {}

/**
 * The operator's upstream channels (`/admin/v1/channels`, docs/channels.md; the vendors package implements it).
 *
 * @since 0.1.0
 * @category services
 */
export class AdminChannels extends Context.Tag("@mediagate/contract/AdminChannels")<AdminChannels, {
  /** Every channel: the environment's read-only `default:*` channels first, then the stored ones, oldest first. */
  readonly list: Effect.Effect<ReadonlyArray<Channel>, Unavailable>
  readonly get: (id: string) => Effect.Effect<Channel, Errors.ChannelNotFound | Unavailable>
  /** Charged against upstream cost per channel and model, for ended live tasks created at or after `since`. */
  readonly usage: (
    query: ChannelUsageQuery
  ) => Effect.Effect<ReadonlyArray<ChannelUsage>, Errors.ValidationError | Unavailable>
  readonly create: (body: ChannelCreate) => Effect.Effect<Channel, Errors.ValidationError | Unavailable>
  readonly update: (
    id: string,
    body: ChannelUpdate
  ) => Effect.Effect<Channel, Errors.ChannelNotFound | Errors.ValidationError | Unavailable>
  /** `ChannelInUse` while tasks run on it, and for the environment's channels (change the environment instead). */
  readonly remove: (id: string) => Effect.Effect<Deleted, Errors.ChannelNotFound | Errors.ChannelInUse | Unavailable>
}>() {}

/**
 * The webhooks' side of the operator API (the webhooks package implements it): deliveries and backlog.
 *
 * @since 0.1.0
 * @category services
 */
export class AdminWebhooks extends Context.Tag("@mediagate/contract/AdminWebhooks")<AdminWebhooks, {
  readonly deliveries: (
    query: AdminDeliveryListQuery
  ) => Effect.Effect<Page<AdminDelivery>, Errors.ValidationError | Unavailable>
  readonly backlog: Effect.Effect<WebhookBacklog, Unavailable>
}>() {}

/**
 * The signature query parameters of a file URL (`/files/<key>?expires=<unix>&signature=<hex>`), as received.
 *
 * @since 0.1.0
 * @category models
 */
export interface FileUrlQuery {
  readonly expires: string | undefined
  readonly signature: string | undefined
}

/**
 * A stored file, ready to be sent: the status (`206` when a byte range was served), every response header
 * (`Content-Type`, `Content-Length`, `Accept-Ranges`, `Cache-Control`, and `Content-Range` for `206`) and the body.
 * The HTTP layer copies it to the wire as is; the body is streamed, never loaded whole.
 *
 * @since 0.1.0
 * @category models
 */
export interface FileAnswer {
  readonly status: 200 | 206
  readonly headers: Readonly<Record<string, string>>
  readonly body: Stream.Stream<Uint8Array, Unavailable>
}

/**
 * Result files under `/files/...`, served only with a valid, unexpired signature (decisions.md §3).
 *
 * @since 0.1.0
 * @category services
 */
export class FileService extends Context.Tag("@mediagate/contract/FileService")<FileService, {
  /**
   * Checks the URL's signature for `key` (the path after `/files/`), then opens the file. `range` is the raw
   * `Range` header: one `bytes=` range is honoured, anything it cannot parse is ignored (the whole file is sent).
   * Missing, invalid or expired signature: `FileAccessDenied` (checked first, so unsigned requests learn nothing);
   * unknown key: `NotFound`; a range past the end of the file: `RangeNotSatisfiable`.
   */
  readonly open: (
    key: string,
    query: FileUrlQuery,
    range: string | undefined
  ) => Effect.Effect<
    FileAnswer,
    Errors.NotFound | Errors.FileAccessDenied | Errors.RangeNotSatisfiable | Unavailable
  >
}>() {}

/**
 * A completion callback an upstream sent to `POST /callbacks/v1/{channel}/{task}` (docs/channels.md).
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamCallback {
  readonly channelId: string
  readonly taskId: string
  /** The callback URL's own signature (`expires`, `signature` of its query). */
  readonly expires: string | undefined
  readonly signature: string | undefined
  /** The raw body and the headers (lower-case names), for the upstream's own signature. */
  readonly body: string
  readonly headers: Readonly<Record<string, string | undefined>>
}

/**
 * Upstream completion callbacks (fal, Replicate): a callback whose URL signature and, where the upstream signs, own
 * signature hold wakes its task for a poll; it never completes a task itself (the vendors package implements it).
 *
 * @since 0.1.0
 * @category services
 */
export class UpstreamCallbacks extends Context.Tag("@mediagate/contract/UpstreamCallbacks")<UpstreamCallbacks, {
  /** `accepted`: the task is polled at once; `refused`: a signature does not hold; `unknown`: no such channel. */
  readonly receive: (callback: UpstreamCallback) => Effect.Effect<"accepted" | "refused" | "unknown">
}>() {}
