/**
 * The Promise client of the Mediagate API: a typed method for every `/api/v1` endpoint, `run` (create and wait),
 * `waitFor`, async iteration over pages, downloads and webhook verification. Types come from the contract
 * (`generated/api.ts`); the run time is `fetch` and Web Crypto only.
 *
 * @since 0.1.0
 */
import { estimateEndpoints, generationEndpoints, operationTable } from "./generated/api.js"
import { readEvents } from "./internal/events.js"
import { type CallOptions, deadline, errorOf, headersOf, send, sleep, type Transport, urlOf } from "./internal/http.js"
import { defaultPollInterval, nextDelay, type PollInterval, terminal } from "./internal/poll.js"
import { MediagateError } from "./MediagateError.js"
import type {
  ApiKey,
  ApiKeyCreated,
  Balance,
  CreationAck,
  Data,
  Deleted,
  Delivery,
  DeliveryWithAttempts,
  Endpoint,
  Estimate,
  GenerationRequest,
  OperationId,
  Page,
  Query,
  RequestBody,
  ResultItem,
  RetryAck,
  SuccessEnvelope,
  Task,
  TaskEventsQuery,
  TaskListQuery,
  TaskSummary,
  Webhook,
  WebhookCreated,
  WebhookEvent,
  WebhookTestResult
} from "./Types.js"
import { type IncomingHeaders, type VerifyOptions, verifyWebhook } from "./Webhooks.js"

/**
 * Options of {@link Mediagate}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions {
  /** An API key (`mg_live_…` or `mg_test_…`). */
  readonly apiKey?: string | undefined
  /** Where the API is served (default `http://localhost:3000`); a prefix such as `https://example.com/mg` works. */
  readonly baseUrl?: string | undefined
  /** The `fetch` to use (default: the global one). */
  readonly fetch?: typeof globalThis.fetch | undefined
  /** Milliseconds per call, retries included (default 60,000). */
  readonly timeout?: number | undefined
  /**
   * Retries of idempotent calls (reads, deletes, and creating calls, which always send an `Idempotency-Key`) on
   * 429, 503 and connection failures (default 2).
   */
  readonly maxRetries?: number | undefined
  /** Headers sent with every call. */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * Options of a call: `signal`, `timeout` (ms) and, on creating calls (`create`, `tasks.retry`, `apiKeys.create`,
 * `webhooks.create`), `idempotencyKey` (default: a new key per call, kept across the call's automatic retries).
 *
 * @since 0.1.0
 * @category models
 */
export type RequestOptions = CallOptions

/**
 * Options of {@link Mediagate.waitFor}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Cancels the wait (the task keeps running; cancel it with `tasks.cancel`). */
  readonly signal?: AbortSignal | undefined
  /** Milliseconds to wait at most (default: no limit). */
  readonly timeout?: number | undefined
  /** Called with the task's first state and whenever its status or progress changes. */
  readonly onProgress?: ((task: Task) => void) | undefined
  /** Called with the task whenever where it waits (`queue_position`) or its upstream log lines (`logs`) change. */
  readonly onQueueUpdate?: ((task: Task) => void) | undefined
  /** Bounds of the polling interval in ms (default 250 to 5,000), when polling. */
  readonly pollInterval?: Partial<PollInterval> | undefined
  /**
   * Wait on the task's event stream (`tasks.stream`; default `true`). Without streaming (a `fetch` without
   * response streams, a server without the endpoint, every stream slot of the key taken) the wait polls instead.
   */
  readonly stream?: boolean | undefined
}

/**
 * Options of `tasks.stream`.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamOptions {
  /** Stops the stream (the iteration ends with an `ABORTED` error). */
  readonly signal?: AbortSignal | undefined
  /** Milliseconds the whole stream may take (default: no limit). */
  readonly timeout?: number | undefined
  /** Resume after this event id (`tasks.stream`: a state's version; `tasks.changes`: a change's place). */
  readonly lastEventId?: string | undefined
}

/**
 * Options of {@link Mediagate.run}: those of {@link WaitOptions} plus the creation's `idempotencyKey`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions extends WaitOptions {
  /**
   * Sent as `Idempotency-Key`: the same key with the same body within 24 h answers the original task (default: a
   * new key per run).
   */
  readonly idempotencyKey?: string | undefined
}

/**
 * Options of `files.download`.
 *
 * @since 0.1.0
 * @category models
 */
export interface DownloadOptions {
  readonly signal?: AbortSignal | undefined
  /** Milliseconds for the download (default: the client's `timeout`). */
  readonly timeout?: number | undefined
}

/** The code of the error of a stream that cannot be read (no response streams, or not an event stream). */
const streamUnsupported = "STREAM_UNSUPPORTED"

/**
 * Whether a wait falls back to polling after `error` of the stream: streams unsupported here or by the server (its
 * route unknown: `NOT_FOUND`, not `TASK_NOT_FOUND`), or every stream slot of the key taken.
 */
const streamless = (error: MediagateError) =>
  error.code === streamUnsupported || error.code === "NOT_FOUND" || error.code === "RATE_LIMITED"

/**
 * The default base URL (the example server).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "http://localhost:3000"

/** What a call sends besides its operation; `creates`: with an `Idempotency-Key` (the caller's or a new one). */
interface Parts {
  readonly params?: Record<string, string>
  readonly query?: object | undefined
  readonly body?: unknown
  readonly creates?: boolean
}

type PageEnvelope<K extends OperationId> = SuccessEnvelope<K> extends
  { readonly data: ReadonlyArray<infer A>; readonly pagination: infer _ } ? Page<A> : never

/**
 * The Mediagate API client.
 *
 * @since 0.1.0
 * @category client
 */
export class Mediagate {
  /** @internal */
  readonly #transport: Transport

  constructor(options: ClientOptions = {}) {
    const fetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init))
    this.#transport = {
      baseUrl: (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, ""),
      apiKey: options.apiKey,
      fetch,
      maxRetries: options.maxRetries ?? 2,
      timeout: options.timeout ?? 60_000,
      headers: options.headers ?? {}
    }
  }

  /**
   * Sends one operation and answers its success envelope.
   *
   * @internal
   */
  #call<K extends OperationId>(
    id: K,
    parts: Parts,
    options?: RequestOptions
  ): Promise<SuccessEnvelope<K>> {
    const { method, path } = operationTable[id]
    return send(this.#transport, { method, path, ...parts }, options) as Promise<SuccessEnvelope<K>>
  }

  /** @internal */
  async #data<K extends OperationId>(
    id: K,
    parts: Parts,
    options?: RequestOptions
  ): Promise<Data<K>> {
    const envelope = await this.#call(id, parts, options) as { readonly data: Data<K> }
    return envelope.data
  }

  /** @internal */
  async #page<K extends OperationId>(
    id: K,
    parts: { readonly params?: Record<string, string>; readonly query?: object | undefined },
    options?: RequestOptions
  ): Promise<PageEnvelope<K>> {
    const envelope = await this.#call(id, parts, options) as unknown as PageEnvelope<K>
    return { data: envelope.data, pagination: envelope.pagination } as PageEnvelope<K>
  }

  /** @internal */
  async *#pages<K extends OperationId>(
    id: K,
    parts: { readonly params?: Record<string, string>; readonly query?: { readonly cursor?: string } | undefined },
    options?: RequestOptions
  ): AsyncGenerator<PageEnvelope<K>, void, undefined> {
    let query = parts.query
    for (;;) {
      const page = await this.#page(id, { ...parts, query }, options)
      yield page
      const cursor = page.pagination.cursor
      if (!page.pagination.hasMore || cursor === null) return
      query = { ...query, cursor }
    }
  }

  /**
   * Creates a generation task (`POST /api/v1/<endpoint>`) and answers at once with its id and estimate.
   *
   * @since 0.1.0
   */
  create<E extends Endpoint>(endpoint: E, body: GenerationRequest<E>, options?: RequestOptions): Promise<CreationAck> {
    const id = generationEndpoints[endpoint]
    if (id === undefined) return Promise.reject(new TypeError(`unknown endpoint ${String(endpoint)}`))
    return this.#data(id, { body, creates: true }, options) as Promise<CreationAck>
  }

  /**
   * The price of a generation request for this key, without making a task
   * (`POST /api/v1/<endpoint>/estimate`): checked as `create` checks it; resolves with the price, the live price,
   * the expected run time and the input the task would run with (the model's defaults filled in).
   *
   * @since 0.1.0
   */
  estimate<E extends Endpoint>(endpoint: E, body: GenerationRequest<E>, options?: RequestOptions): Promise<Estimate> {
    const id = estimateEndpoints[endpoint]
    if (id === undefined) return Promise.reject(new TypeError(`unknown endpoint ${String(endpoint)}`))
    return this.#data(id, { body }, options) as Promise<Estimate>
  }

  /**
   * Creates a task and resolves with it once finished (`succeeded`, `failed`, `cancelled` or `expired`: check
   * `status`), polling with backoff paced by the task's `estimated_seconds`. `timeout` bounds the whole run.
   *
   * @since 0.1.0
   */
  async run<E extends Endpoint>(endpoint: E, body: GenerationRequest<E>, options: RunOptions = {}): Promise<Task> {
    const limit = deadline(options.signal, options.timeout ?? Infinity)
    try {
      const ack = await this.create(endpoint, body, { signal: limit.signal, idempotencyKey: options.idempotencyKey })
      return await this.waitFor(ack, { ...options, signal: limit.signal, timeout: undefined })
    } catch (error) {
      throw limit.signal.aborted ? limit.error() : error
    } finally {
      limit.clear()
    }
  }

  /**
   * Polls a task until it is finished and resolves with it (any terminal status: check `status`).
   *
   * @since 0.1.0
   */
  async waitFor(
    task: string | Pick<CreationAck, "id" | "estimated_seconds">,
    options: WaitOptions = {}
  ): Promise<Task> {
    const bounds = { ...defaultPollInterval, ...options.pollInterval }
    const limit = deadline(options.signal, options.timeout ?? Infinity)
    const id = typeof task === "string" ? task : task.id
    const started = Date.now()
    let estimated = typeof task === "string" ? 0 : task.estimated_seconds
    let delay: number | undefined = undefined
    let seen: string | undefined = undefined
    let queue: string | undefined = undefined
    /** Reports a state that differs from the last one; whether it is terminal. */
    const report = (current: Task) => {
      const state = `${current.status}:${current.progress}`
      if (state !== seen) {
        seen = state
        options.onProgress?.(current)
      }
      const waiting = JSON.stringify([current.queue_position, current.logs])
      if (waiting !== queue) {
        if (queue !== undefined || current.queue_position !== undefined || current.logs !== undefined) {
          options.onQueueUpdate?.(current)
        }
        queue = waiting
      }
      return terminal.has(current.status)
    }
    try {
      if (options.stream !== false) {
        try {
          for await (const current of this.#stream(id, { signal: limit.signal })) {
            if (report(current)) return current
          }
        } catch (error) {
          // without a stream to read: poll
          if (!MediagateError.is(error) || !streamless(error)) throw error
        }
      } else if (typeof task !== "string") {
        delay = nextDelay(undefined, 0, estimated, bounds)
        await sleep(delay, limit.signal)
      }
      for (;;) {
        const current = await this.tasks.get(id, { signal: limit.signal })
        if (report(current)) return current
        estimated = current.estimated_seconds
        delay = nextDelay(delay, Date.now() - started, estimated, bounds)
        await sleep(delay, limit.signal)
      }
    } catch (error) {
      throw limit.signal.aborted ? limit.error() : error
    } finally {
      limit.clear()
    }
  }

  /**
   * A task's states from its event stream (`GET /api/v1/tasks/{id}/events`).
   *
   * @internal
   */
  #stream(id: string, options: StreamOptions): AsyncGenerator<Task, void, undefined> {
    const path = operationTable["tasks.events"].path
    return this.#events(urlOf(this.#transport.baseUrl, { method: "GET", path, params: { id } }), options, true)
  }

  /**
   * The tasks of an event stream (`GET /api/v1/tasks/{id}/events`, `GET /api/v1/tasks/events`) until its end (a
   * task's: `end`, 204, a terminal state), reconnecting with `Last-Event-ID` after a dropped connection (up to
   * `maxRetries` times in a row).
   *
   * @internal
   */
  async *#events(url: string, options: StreamOptions, endsAt: boolean): AsyncGenerator<Task, void, undefined> {
    const transport = this.#transport
    const limit = deadline(options.signal, options.timeout ?? Infinity)
    let lastEventId = options.lastEventId
    let wait = 2_000
    let failures = 0
    try {
      for (;;) {
        const headers = headersOf(transport, "text/event-stream")
        if (lastEventId !== undefined) headers["last-event-id"] = lastEventId
        try {
          const response = await transport.fetch(url, { headers, signal: limit.signal })
          // the client has the final state already
          if (response.status === 204) return
          if (!response.ok) throw errorOf(response, await response.json().catch(() => undefined))
          if (response.body == null || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
            await response.body?.cancel()
            throw new MediagateError({ code: streamUnsupported, message: "no event stream", status: response.status })
          }
          for await (const event of readEvents(response.body)) {
            if (event.retry !== undefined && Number(event.retry) >= 0) wait = Number(event.retry)
            if (event.event === "end") return
            if (event.event === "task" && event.data !== undefined) {
              failures = 0
              lastEventId = event.id ?? lastEventId
              const task = JSON.parse(event.data) as Task
              yield task
              if (endsAt && terminal.has(task.status)) return
            }
          }
        } catch (cause) {
          if (limit.signal.aborted) throw limit.error()
          if (MediagateError.is(cause)) throw cause
          if (failures >= transport.maxRetries) {
            throw new MediagateError({ code: "NETWORK_ERROR", message: String(cause), status: 0, cause })
          }
        }
        // the stream closed before the end, or the connection failed: again after the server's delay
        failures += 1
        await sleep(wait, limit.signal).catch(() => Promise.reject(limit.error()))
      }
    } finally {
      limit.clear()
    }
  }

  /**
   * Tasks: list (one page, or every page with `pages`), read, retry, cancel.
   *
   * @since 0.1.0
   */
  readonly tasks = {
    /** One page of tasks, newest first, with filters and a cursor. */
    list: (query: TaskListQuery = {}, options?: RequestOptions): Promise<Page<TaskSummary>> =>
      this.#page("tasks.list", { query }, options),
    /** Every page from `query` on (`for await (const page of client.tasks.pages({ status: "failed" }))`). */
    pages: (query: TaskListQuery = {}, options?: RequestOptions): AsyncIterable<Page<TaskSummary>> =>
      this.#pages("tasks.list", { query }, options),
    /** Reads a task. */
    get: (id: string, options?: RequestOptions): Promise<Task> => this.#data("tasks.get", { params: { id } }, options),
    /**
     * The task's states as they change, from its event stream: the current one, then each change, until a terminal
     * state (`for await (const task of client.tasks.stream(id))`). A dropped connection is resumed where it left
     * off. Needs a `fetch` with response streams (Node 18+, browsers); fails with `STREAM_UNSUPPORTED` otherwise.
     */
    stream: (id: string, options: StreamOptions = {}): AsyncIterable<Task> => this.#stream(id, options),
    /**
     * Every change of the key's tasks that passes the filters (the list's), oldest first, as the task after it
     * (`for await (const task of client.tasks.changes({ status: "succeeded" }))`): from now on, or after
     * `lastEventId`. It does not end by itself: stop it with `signal` or `break`. A dropped connection is resumed.
     */
    changes: (query: TaskEventsQuery = {}, options: StreamOptions = {}): AsyncIterable<Task> =>
      this.#events(
        urlOf(this.#transport.baseUrl, { method: "GET", path: operationTable["tasks.accountEvents"].path, query }),
        options,
        false
      ),
    /**
     * Retries a failed or expired task as a new task, charged again. Each call is one retry: its automatic retries
     * and a repeat with the same `idempotencyKey` (within 24 h) answer the same new task.
     */
    retry: (id: string, options?: RequestOptions): Promise<RetryAck> =>
      this.#data("tasks.retry", { params: { id }, creates: true }, options),
    /** Cancels a pending or queued task (refunded). */
    cancel: (id: string, options?: RequestOptions): Promise<Task> =>
      this.#data("tasks.cancel", { params: { id } }, options)
  }

  /**
   * Voices of `vendor9`.
   *
   * @since 0.1.0
   */
  readonly voices = {
    /** The voices; `name` filters by case-insensitive substring. */
    list: (query: Query<"voices.list"> = {}, options?: RequestOptions): Promise<Data<"voices.list">> =>
      this.#data("voices.list", { query }, options)
  }

  /**
   * The account balance and its ledger.
   *
   * @since 0.1.0
   */
  readonly balance = {
    /** The balance and billing settings. */
    get: (options?: RequestOptions): Promise<Balance> => this.#data("balance.get", {}, options),
    /** One page of the ledger (charges, refunds, top-ups), newest first. */
    ledger: (query: Query<"balance.ledger"> = {}, options?: RequestOptions): Promise<PageEnvelope<"balance.ledger">> =>
      this.#page("balance.ledger", { query }, options),
    /** Every page of the ledger from `query` on. */
    ledgerPages: (
      query: Query<"balance.ledger"> = {},
      options?: RequestOptions
    ): AsyncIterable<PageEnvelope<"balance.ledger">> => this.#pages("balance.ledger", { query }, options)
  }

  /**
   * API keys of the account.
   *
   * @since 0.1.0
   */
  readonly apiKeys = {
    /** Creates a key; the full key is in this answer only. */
    create: (body: RequestBody<"apiKeys.create">, options?: RequestOptions): Promise<ApiKeyCreated> =>
      this.#data("apiKeys.create", { body, creates: true }, options),
    /** The account's keys (never the secrets). */
    list: (options?: RequestOptions): Promise<ReadonlyArray<ApiKey>> => this.#data("apiKeys.list", {}, options),
    /** Revokes a key. */
    delete: (id: string, options?: RequestOptions): Promise<Deleted> =>
      this.#data("apiKeys.delete", { params: { id } }, options)
  }

  /**
   * Registered webhooks, their deliveries, and verification of what they send.
   *
   * @since 0.1.0
   */
  readonly webhooks = {
    /** Registers a webhook; its signing secret is in this answer only. */
    create: (body: RequestBody<"webhooks.create">, options?: RequestOptions): Promise<WebhookCreated> =>
      this.#data("webhooks.create", { body, creates: true }, options),
    /** The registered webhooks. */
    list: (options?: RequestOptions): Promise<ReadonlyArray<Webhook>> => this.#data("webhooks.list", {}, options),
    /** Deletes a webhook. */
    delete: (id: string, options?: RequestOptions): Promise<Deleted> =>
      this.#data("webhooks.delete", { params: { id } }, options),
    /** Enables a webhook that a `410 Gone` disabled (`disabledReason` says why it is). */
    enable: (id: string, options?: RequestOptions): Promise<Webhook> =>
      this.#data("webhooks.enable", { params: { id } }, options),
    /** Sends one signed test event now and reports the outcome. */
    test: (id: string, options?: RequestOptions): Promise<WebhookTestResult> =>
      this.#data("webhooks.test", { params: { id } }, options),
    /** One page of a webhook's deliveries, newest first. */
    deliveries: (
      id: string,
      query: Query<"webhooks.deliveries"> = {},
      options?: RequestOptions
    ): Promise<Page<DeliveryWithAttempts>> => this.#page("webhooks.deliveries", { params: { id }, query }, options),
    /** Every page of a webhook's deliveries from `query` on. */
    deliveryPages: (
      id: string,
      query: Query<"webhooks.deliveries"> = {},
      options?: RequestOptions
    ): AsyncIterable<Page<DeliveryWithAttempts>> =>
      this.#pages("webhooks.deliveries", { params: { id }, query }, options),
    /** Replays a delivery: a new attempt series of the same event. */
    replay: (id: string, deliveryId: string, options?: RequestOptions): Promise<Delivery> =>
      this.#data("webhooks.replay", { params: { id, deliveryId } }, options),
    /**
     * Verifies a delivery (raw body, headers, the webhook's secret) and resolves with the event: {@link verifyWebhook}.
     */
    verify: (
      rawBody: string | Uint8Array | ArrayBuffer,
      headers: IncomingHeaders,
      secret: string,
      options?: VerifyOptions
    ): Promise<WebhookEvent> => verifyWebhook(rawBody, headers, secret, options)
  }

  /**
   * Result files.
   *
   * @since 0.1.0
   */
  readonly files = {
    /**
     * Downloads a result file (its signed URL; no API key is sent) and checks its size against `size_bytes`.
     * Resolves with a `Blob` (`await blob.arrayBuffer()`, `blob.stream()`, `blob.type`).
     */
    download: async (item: Pick<ResultItem, "url" | "size_bytes">, options: DownloadOptions = {}): Promise<Blob> => {
      const limit = deadline(options.signal, options.timeout ?? this.#transport.timeout)
      try {
        const response = await this.#transport.fetch(item.url, { signal: limit.signal })
        if (!response.ok) {
          const text = await response.text()
          let body: unknown = undefined
          try {
            body = JSON.parse(text)
          } catch {
            // not an envelope
          }
          throw errorOf(response, body)
        }
        const blob = await response.blob()
        if (blob.size !== item.size_bytes) {
          throw new MediagateError({
            code: "DOWNLOAD_SIZE_MISMATCH",
            message: `expected ${item.size_bytes} bytes, got ${blob.size}`,
            status: response.status
          })
        }
        return blob
      } catch (error) {
        if (MediagateError.is(error)) throw error
        throw limit.signal.aborted
          ? limit.error()
          : new MediagateError({ code: "NETWORK_ERROR", message: String(error), status: 0, cause: error })
      } finally {
        limit.clear()
      }
    }
  }
}

type Method = (...args: ReadonlyArray<never>) => unknown

/**
 * The client method of every operation of the contract, by operation id. Typed over every operation id of the
 * generated table: an endpoint added to the contract without a method here fails `tsc -b` (and the client tests).
 *
 * @since 0.1.0
 * @category utils
 */
export const methodOf: { readonly [K in OperationId]: (client: Mediagate) => Method } = {
  ...(Object.fromEntries(
    Object.values(generationEndpoints).map((id) => [id, (client: Mediagate) => client.create.bind(client)])
  ) as { readonly [K in (typeof generationEndpoints)[Endpoint]]: (client: Mediagate) => Method }),
  ...(Object.fromEntries(
    Object.values(estimateEndpoints).map((id) => [id, (client: Mediagate) => client.estimate.bind(client)])
  ) as { readonly [K in (typeof estimateEndpoints)[Endpoint]]: (client: Mediagate) => Method }),
  "tasks.list": (c) => c.tasks.list,
  "tasks.get": (c) => c.tasks.get,
  "tasks.events": (c) => c.tasks.stream,
  "tasks.accountEvents": (c) => c.tasks.changes,
  "tasks.retry": (c) => c.tasks.retry,
  "tasks.cancel": (c) => c.tasks.cancel,
  "voices.list": (c) => c.voices.list,
  "balance.get": (c) => c.balance.get,
  "balance.ledger": (c) => c.balance.ledger,
  "apiKeys.create": (c) => c.apiKeys.create,
  "apiKeys.list": (c) => c.apiKeys.list,
  "apiKeys.delete": (c) => c.apiKeys.delete,
  "webhooks.create": (c) => c.webhooks.create,
  "webhooks.list": (c) => c.webhooks.list,
  "webhooks.delete": (c) => c.webhooks.delete,
  "webhooks.test": (c) => c.webhooks.test,
  "webhooks.enable": (c) => c.webhooks.enable,
  "webhooks.deliveries": (c) => c.webhooks.deliveries,
  "webhooks.replay": (c) => c.webhooks.replay
}
