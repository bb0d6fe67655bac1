/**
 * In-test implementations of the application ports: small, honest in-memory services with just enough behaviour
 * to drive every HTTP outcome (account scoping, balance refusals, idempotency, retry/cancel states, auth order).
 */
import { ApiKey, Errors, type Generation, RateLimit, type Security, Services, Task } from "@mediagate/contract"
import { Health } from "@mediagate/server"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import ipaddr from "ipaddr.js"

const key = (env: "live" | "test", fill: string) => `mg_${env}_${fill.repeat(32).slice(0, 32)}`

interface FakeKey {
  readonly token: string
  readonly principal: Omit<Security.Principal, "clientAddress">
  readonly revoked?: boolean
  readonly expired?: boolean
  readonly ipWhitelist?: ReadonlyArray<string>
}

const principal = (
  keyId: string,
  accountId: string,
  permissions: ApiKey.Permissions = {},
  environment: "live" | "test" = "live"
): FakeKey["principal"] => ({
  accountId,
  keyId,
  environment,
  permissions,
  spendLimitMicros: null,
  spentMicros: 0,
  expiresAt: null
})

/** The keys the fake KeyService knows. */
export const keys = {
  live: key("live", "A"),
  test: key("test", "B"),
  other: key("live", "O"),
  poor: key("live", "P"),
  readOnly: key("live", "R"),
  vendor1Only: key("live", "V"),
  noPermissions: key("live", "N"),
  revoked: key("live", "X"),
  expired: key("live", "E"),
  ipLocked: key("live", "I"),
  defect: key("live", "D")
} as const

const fakeKeys: ReadonlyArray<FakeKey> = [
  { token: keys.live, principal: principal("key_live", "acct_main") },
  { token: keys.test, principal: principal("key_test", "acct_main", {}, "test") },
  { token: keys.other, principal: principal("key_other", "acct_other") },
  { token: keys.poor, principal: principal("key_poor", "acct_poor") },
  { token: keys.readOnly, principal: principal("key_ro", "acct_main", { "tasks:read": true }) },
  {
    token: keys.vendor1Only,
    principal: principal("key_v1", "acct_main", { "video:create": true, "tasks:write": true, providers: ["vendor1"] })
  },
  { token: keys.noPermissions, principal: principal("key_none", "acct_main", { "balance:read": false }) },
  { token: keys.revoked, principal: principal("key_revoked", "acct_main"), revoked: true },
  { token: keys.expired, principal: principal("key_expired", "acct_main"), expired: true },
  { token: keys.ipLocked, principal: principal("key_ip", "acct_main"), ipWhitelist: ["10.0.0.0/8", "192.0.2.7"] },
  { token: keys.defect, principal: principal("key_defect", "acct_defect") }
]

const inWhitelist = (address: string | undefined, whitelist: ReadonlyArray<string>) => {
  if (whitelist.length === 0) return true
  if (address === undefined || !ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address)
  return whitelist.some((entry) => {
    const [range, bits] = entry.includes("/")
      ? ipaddr.parseCIDR(entry)
      : [ipaddr.process(entry), ipaddr.process(entry).kind() === "ipv4" ? 32 : 128] as const
    return range.kind() === parsed.kind() && parsed.match(range, bits)
  })
}

/** Authentication with the order of decisions.md §5. */
export const KeyServiceFake = Layer.succeed(Services.KeyService, {
  authenticate: ({ authorization, clientAddress }) =>
    Effect.gen(function*() {
      if (authorization === undefined || authorization.trim() === "") {
        return yield* new Errors.AuthRequired({ message: "API key required" })
      }
      const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim())
      if (match === null || !ApiKey.keyPattern.test(match[1]!)) {
        return yield* new Errors.AuthInvalidToken({ message: "malformed API key" })
      }
      const found = fakeKeys.find((k) => k.token === match[1])
      if (found === undefined) return yield* new Errors.AuthInvalidToken({ message: "unknown API key" })
      if (found.revoked) return yield* new Errors.KeyRevoked({ message: "API key has been revoked" })
      if (found.expired) return yield* new Errors.AuthTokenExpired({ message: "API key has expired" })
      if (!inWhitelist(clientAddress, found.ipWhitelist ?? [])) {
        return yield* new Errors.KeyPermissionDenied({ message: "IP address not allowed for this key" })
      }
      return { ...found.principal, clientAddress }
    }),
  create: (caller, body) => Effect.succeed(createdKey("key_new", body, body.environment ?? caller.environment, "K")),
  list: (caller) =>
    Effect.succeed(
      fakeKeys.filter((k) => k.principal.accountId === caller.accountId).map((k) => ({
        id: k.principal.keyId,
        name: k.principal.keyId,
        environment: k.principal.environment,
        maskedKey: ApiKey.maskKey(k.token),
        permissions: k.principal.permissions,
        ipWhitelist: k.ipWhitelist ?? [],
        spendLimit: null,
        spent: 0,
        expiresAt: null,
        createdAt: "2026-11-21T00:00:00.000Z",
        lastUsedAt: null,
        rateLimit: { requestsPerMinute: null, maxInFlightTasks: null }
      }))
    ),
  revoke: (caller, id) =>
    fakeKeys.some((k) => k.principal.keyId === id && k.principal.accountId === caller.accountId)
      ? Effect.succeed({ id, deleted: true as const })
      : Effect.fail(new Errors.ApiKeyNotFound({ message: `API key ${id} not found` }))
})

/** The answer of a key creation in the fakes. */
const createdKey = (id: string, body: ApiKey.ApiKeyCreate, environment: "live" | "test", fill: string) => ({
  id,
  key: key(environment, fill),
  name: body.name,
  environment,
  maskedKey: ApiKey.maskKey(key(environment, fill)),
  permissions: body.permissions ?? {},
  ipWhitelist: body.ipWhitelist ?? [],
  spendLimit: body.spendLimit ?? null,
  spent: 0,
  expiresAt: body.expiresAt ? body.expiresAt.toISOString() : null,
  createdAt: "2026-11-21T00:00:00.000Z",
  lastUsedAt: null,
  rateLimit: {
    requestsPerMinute: body.rateLimit?.requestsPerMinute ?? null,
    maxInFlightTasks: body.rateLimit?.maxInFlightTasks ?? null
  }
})

const iso = (n: number) => new Date(Date.UTC(2026, 10, 21, 0, 0, n)).toISOString()

/** Tasks in memory, scoped by account. */
export const makeTaskServiceFake = Effect.sync(() => {
  const tasks = new Map<string, { accountId: string; keyId?: string; task: Task.Task; idempotency?: string }>()
  let counter = 0
  const nextId = () => `task_${String(++counter).padStart(26, "0")}`
  const seed = (accountId: string, status: Task.TaskStatus) => {
    const id = nextId()
    tasks.set(id, {
      accountId,
      task: {
        id,
        type: "video",
        operation: "text-to-video",
        status,
        provider: "vendor3",
        model: "vendor3-3",
        ...(status === "failed" ? { error: { code: "PROVIDER_ERROR", message: "upstream failed" } } : {}),
        progress: status === "succeeded" ? 100 : 0,
        cost: 3.2,
        input: { prompt: "seeded", aspect_ratio: "16:9" },
        metadata: {},
        webhookUrl: null,
        original_task_id: null,
        estimated_seconds: 60,
        created_at: iso(counter),
        started_at: null,
        completed_at: null
      }
    })
    return id
  }
  const seeded = {
    failed: seed("acct_main", "failed"),
    running: seed("acct_main", "running"),
    pending: seed("acct_main", "pending"),
    otherAccount: seed("acct_other", "failed")
  }
  const find = (principal: Security.Principal, id: string) => {
    const entry = tasks.get(id)
    return entry !== undefined && entry.accountId === principal.accountId
      ? Effect.succeed(entry)
      : Effect.fail(new Errors.TaskNotFound({ message: `task ${id} not found` }))
  }
  const create = (principal: Security.Principal, command: Generation.GenerationCommand) =>
    Effect.gen(function*() {
      if (principal.accountId === "acct_poor") {
        return yield* new Errors.InsufficientBalance({ message: "balance is too low for this request" })
      }
      if (principal.accountId === "acct_defect") {
        return yield* Effect.die(new Error("relation \"tasks\" does not exist: SELECT secret FROM tasks"))
      }
      if (command.idempotencyKey !== undefined) {
        const previous = [...tasks.values()].find((t) => t.idempotency === command.idempotencyKey)
        if (previous !== undefined) {
          if (JSON.stringify(previous.task.input) !== JSON.stringify(command.request.input)) {
            return yield* new Errors.IdempotencyKeyReused({ message: "Idempotency-Key was used with another request" })
          }
          const t = previous.task
          return {
            id: t.id,
            status: "pending" as const,
            type: t.operation,
            provider: t.provider,
            model: t.model,
            created_at: t.created_at,
            estimated_seconds: 60
          }
        }
      }
      const id = nextId()
      const [family, operation] = command.endpoint.split("/") as [Task.Task["provider"], Task.Task["operation"]]
      const task: Task.Task = {
        id,
        type: operation.endsWith("image") ? "image" : "video",
        operation,
        status: "pending",
        provider: family,
        model: command.request.model,
        progress: 0,
        cost: principal.environment === "test" ? 0 : 1,
        input: command.request.input,
        metadata: command.request.metadata ?? {},
        webhookUrl: command.request.webhookUrl ?? null,
        original_task_id: null,
        estimated_seconds: 60,
        created_at: iso(counter),
        started_at: null,
        completed_at: null
      }
      tasks.set(id, {
        accountId: principal.accountId,
        keyId: principal.keyId,
        task,
        ...(command.idempotencyKey === undefined ? {} : { idempotency: command.idempotencyKey })
      })
      return {
        id,
        status: "pending" as const,
        type: operation,
        provider: family,
        model: task.model,
        created_at: task.created_at,
        estimated_seconds: 60
      }
    })
  const service: Services.TaskService["Type"] = {
    create,
    get: (principal, id) => Effect.map(find(principal, id), (e) => e.task),
    // a version is the task's JSON; the changes are read from the fake's store every `every` ms
    watch: (principal, id) => {
      const versionOf = (task: Task.Task): Services.TaskVersion => ({
        version: JSON.stringify(task),
        task,
        terminal: Task.terminalStatuses.includes(task.status)
      })
      return Effect.map(find(principal, id), (entry) => ({
        current: versionOf(entry.task),
        changes: (after, every) =>
          Stream.unfoldChunkEffect(
            after,
            (last) =>
              last.terminal ? Effect.succeed(Option.none()) : Effect.sleep(every).pipe(
                Effect.zipRight(Effect.option(find(principal, id))),
                Effect.map(Option.map((found) => {
                  const next = versionOf(found.task)
                  return next.version === last.version
                    ? [Chunk.empty<Services.TaskVersion>(), last] as const
                    : [Chunk.of(next), next] as const
                }))
              )
          )
      }))
    },
    // a fake price, as the fake's tasks cost (1 USD live, 0 test)
    estimate: (principal, command) =>
      Effect.succeed({
        type: command.endpoint.split("/")[1] as Task.Task["operation"],
        provider: command.endpoint.split("/")[0]!,
        model: command.request.model,
        price: principal.environment === "test" ? 0 : 1,
        live_price: 1,
        estimated_seconds: 60,
        input: command.request.input
      }),
    // the account's change stream is the engine's (tested on the production server: node/test/TaskEvents.test.ts)
    changes: () => Stream.never,
    list: (principal, query) =>
      Effect.sync(() => {
        const all = [...tasks.values()]
          .filter((e) => e.accountId === principal.accountId)
          .map((e) => e.task)
          .filter((t) => query.status === undefined || t.status === query.status)
          .filter((t) => query.provider === undefined || t.provider === query.provider)
          .filter((t) => query.search === undefined || t.id.startsWith(query.search))
          .reverse()
        const limit = query.limit ?? 20
        return {
          data: all.slice(0, limit).map(({ estimated_seconds: _e, input: _i, result: _r, webhookUrl: _w, ...t }) => t),
          pagination: {
            cursor: all.length > limit ? all[limit - 1]!.id : null,
            hasMore: all.length > limit,
            total: all.length
          }
        }
      }),
    retry: (principal, id) =>
      Effect.gen(function*() {
        const entry = yield* find(principal, id)
        if (entry.task.status !== "failed" && entry.task.status !== "expired") {
          return yield* new Errors.TaskNotRetryable({ message: `task ${id} is ${entry.task.status}` })
        }
        const ack = yield* create(principal, {
          endpoint: `${entry.task.provider}/${entry.task.operation}` as Generation.GenerationCommand["endpoint"],
          request: { model: entry.task.model, input: entry.task.input },
          idempotencyKey: undefined
        })
        return {
          id: ack.id,
          original_task_id: id,
          status: "pending" as const,
          type: entry.task.type,
          operation: entry.task.operation,
          provider: entry.task.provider,
          model: entry.task.model,
          created_at: ack.created_at,
          estimated_seconds: ack.estimated_seconds
        }
      }),
    cancel: (principal, id) =>
      Effect.gen(function*() {
        const entry = yield* find(principal, id)
        if (entry.task.status !== "pending" && entry.task.status !== "queued") {
          return yield* new Errors.TaskNotCancellable({ message: `task ${id} is ${entry.task.status}` })
        }
        entry.task = { ...entry.task, status: "cancelled", completed_at: iso(99) }
        return entry.task
      }),
    inFlight: (principal) =>
      Effect.sync(() => {
        let account = 0
        let key = 0
        for (const entry of tasks.values()) {
          const active = ["pending", "queued", "running"].includes(entry.task.status)
          if (!active || entry.accountId !== principal.accountId) continue
          account++
          if (entry.keyId === principal.keyId) key++
        }
        return { account, key }
      }),
    providerOf: (principal, id) =>
      Effect.sync(() => {
        const entry = tasks.get(id)
        return entry !== undefined && entry.accountId === principal.accountId
          ? Option.some({ provider: entry.task.provider, type: entry.task.type })
          : Option.none()
      })
  }
  return { service, seeded }
})

/** The seeded task ids of a fake task service. */
export class SeededTasks extends Effect.Tag("test/SeededTasks")<SeededTasks, {
  readonly failed: string
  readonly running: string
  readonly pending: string
  readonly otherAccount: string
}>() {}

/** The task service fake and its seeded ids. */
export const TaskServiceFake = Layer.effectContext(
  Effect.map(
    makeTaskServiceFake,
    ({ seeded, service }) => Context.make(Services.TaskService, service).pipe(Context.add(SeededTasks, seeded))
  )
)

/** Balance, voices, webhooks and admin fakes. */
export const OtherServicesFake = Layer.mergeAll(
  Layer.succeed(Services.BillingService, {
    balance: () =>
      Effect.succeed({
        balance: 12.5,
        billingMode: "prepaid" as const,
        monthlySpendLimit: null,
        autoTopUpEnabled: false,
        autoTopUpThreshold: null,
        autoTopUpAmount: null,
        currency: "USD" as const,
        monthToDateSpend: 1.25
      }),
    ledger: () =>
      Effect.succeed({
        data: [{
          id: "1",
          kind: "top_up" as const,
          amount: 12.5,
          task_id: null,
          key_id: null,
          description: "opening credit",
          month: "2026-01",
          created_at: "2026-01-01T00:00:00.000Z"
        }],
        pagination: { cursor: null, hasMore: false, total: 1 }
      })
  }),
  Layer.succeed(Services.VoiceService, {
    list: (name) => {
      const voices = [
        { voice_id: "v_alba", name: "Alba", description: "Warm narrator" },
        { voice_id: "v_bruno", name: "Bruno", description: "Deep voice" }
      ].filter((v) => name === undefined || v.name.toLowerCase().includes(name.toLowerCase()))
      return Effect.succeed({ voices, total: voices.length })
    }
  }),
  Layer.succeed(Services.WebhookService, {
    create: (p, body) =>
      Effect.succeed({
        id: "wh_1",
        environment: p.environment,
        url: body.url,
        events: body.events,
        description: body.description ?? null,
        enabled: true,
        disabledReason: null,
        createdAt: "2026-11-21T00:00:00.000Z",
        secret: "whsec_c2VjcmV0"
      }),
    list: () => Effect.succeed([]),
    remove: (_p, id) =>
      id === "wh_1"
        ? Effect.succeed({ id, deleted: true as const })
        : Effect.fail(new Errors.WebhookNotFound({ message: `webhook ${id} not found` })),
    enable: (p, id) =>
      id === "wh_1"
        ? Effect.succeed({
          id,
          environment: p.environment,
          url: "https://hooks.example.com/in",
          events: ["task.completed" as const],
          description: null,
          enabled: true,
          disabledReason: null,
          createdAt: "2026-11-21T00:00:00.000Z"
        })
        : Effect.fail(new Errors.WebhookNotFound({ message: `webhook ${id} not found` })),
    test: (_p, id) =>
      id === "wh_1"
        ? Effect.succeed({ delivered: true, statusCode: 200, durationMs: 3, error: null })
        : Effect.fail(new Errors.WebhookNotFound({ message: `webhook ${id} not found` })),
    deliveries: (_p, id) =>
      id === "wh_1"
        ? Effect.succeed({ data: [], pagination: { cursor: null, hasMore: false, total: 0 } })
        : Effect.fail(new Errors.WebhookNotFound({ message: `webhook ${id} not found` })),
    replay: (_p, id, deliveryId) =>
      id !== "wh_1"
        ? Effect.fail(new Errors.WebhookNotFound({ message: `webhook ${id} not found` }))
        : Effect.fail(new Errors.DeliveryNotFound({ message: `delivery ${deliveryId} not found` }))
  }),
  Layer.succeed(Services.AdminService, {
    createAccount: (body) => Effect.succeed(account("acct_new", body.name, body.balance ?? 0)),
    getAccount: (id) =>
      id === "acct_main"
        ? Effect.succeed(account(id, "Main", 12.5))
        : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })),
    updateAccount: (id, body) =>
      id === "acct_main"
        ? Effect.succeed(account(id, body.name ?? "Main", 12.5))
        : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })),
    credit: (id, body) =>
      id === "acct_main"
        ? Effect.succeed(account(id, "Main", 12.5 + body.amount))
        : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })),
    createKey: (id, body) =>
      id === "acct_main"
        ? Effect.succeed(createdKey("key_admin", body, body.environment ?? "live", "Z"))
        : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })),
    // the operator views (their real implementations are tested in packages/node/test/Operator.test.ts)
    listAccounts: () =>
      Effect.succeed({
        data: [account("acct_main", "Main", 12.5)],
        pagination: { cursor: null, hasMore: false, total: 1 }
      }),
    listKeys: (id) =>
      id === "acct_main"
        ? Effect.succeed([])
        : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })),
    revokeKey: (id) => Effect.fail(new Errors.ApiKeyNotFound({ message: `API key ${id} not found` })),
    listTasks: () => Effect.succeed({ data: [], pagination: { cursor: null, hasMore: false, total: 0 } }),
    getTask: (id) => Effect.fail(new Errors.TaskNotFound({ message: `task ${id} not found` })),
    listDeliveries: () => Effect.succeed({ data: [], pagination: { cursor: null, hasMore: false, total: 0 } }),
    system: Effect.succeed({
      tasks: {
        by_status: { pending: 0, queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, expired: 0 },
        queue_depth: 0,
        in_flight_upstream: 0,
        due: 0
      },
      webhooks: { pending: 0, due: 0, failed_last_hour: 0 },
      nodes: [],
      checked_at: "2026-11-21T00:00:00.000Z"
    })
  }),
  // the real channels service is tested over HTTP in packages/node/test/Channels.test.ts
  Layer.succeed(Services.AdminChannels, {
    list: Effect.succeed([]),
    get: (id) => Effect.fail(new Errors.ChannelNotFound({ message: `channel ${id} not found` })),
    create: () => Effect.fail(new Errors.ValidationError({ message: "channels: not stored by this fake" })),
    update: (id) => Effect.fail(new Errors.ChannelNotFound({ message: `channel ${id} not found` })),
    remove: (id) => Effect.fail(new Errors.ChannelNotFound({ message: `channel ${id} not found` })),
    usage: () => Effect.succeed([])
  })
)

const account = (id: string, name: string, balance: number) => ({
  id,
  name,
  balance,
  billingMode: "prepaid" as const,
  monthlySpendLimit: null,
  autoTopUpEnabled: false,
  autoTopUpThreshold: null,
  autoTopUpAmount: null,
  creditLimit: 100,
  currency: "USD" as const,
  monthToDateSpend: 0,
  createdAt: "2026-11-21T00:00:00.000Z"
})

/** The files of the fake FileService and the one signature it accepts. */
export const fileFixtures = {
  video: {
    key: "tasks/task_1/video-0.mp4",
    contentType: "video/mp4",
    bytes: Uint8Array.from({ length: 300 }, (_, i) => i % 256)
  },
  text: {
    key: "notes/hello.txt",
    contentType: "text/plain; charset=utf-8",
    bytes: new TextEncoder().encode("hello, files")
  },
  /** 2100-01-01T00:00:00Z */
  expires: "4102444800",
  /** 2000-01-01T00:00:00Z */
  expired: "946684800",
  signature: "5".repeat(64)
} as const

/** A file URL path as the fake FileService signs it. */
export const fileUrl = (key: string, options: { readonly expires?: string; readonly signature?: string } = {}) =>
  `/files/${key}?expires=${options.expires ?? fileFixtures.expires}&signature=${
    options.signature ?? fileFixtures.signature
  }`

/** Result files in memory: one fixed signature, expiry against the real clock, single `bytes=` ranges. */
export const FileServiceFake = Layer.succeed(Services.FileService, {
  open: (key, query, range) =>
    Effect.gen(function*() {
      if (query.expires === undefined || query.signature === undefined) {
        return yield* new Errors.FileAccessDenied({ message: "file URL is not signed" })
      }
      if (query.signature !== fileFixtures.signature) {
        return yield* new Errors.FileAccessDenied({ message: "file URL signature is invalid" })
      }
      if (Number(query.expires) * 1000 < Date.now()) {
        return yield* new Errors.FileAccessDenied({ message: "file URL has expired" })
      }
      const file = [fileFixtures.video, fileFixtures.text].find((f) => f.key === key)
      if (file === undefined) return yield* new Errors.NotFound({ message: `file ${key} not found` })
      const size = file.bytes.length
      const headers: Record<string, string> = {
        "content-type": file.contentType,
        "accept-ranges": "bytes",
        "cache-control": "private, max-age=60"
      }
      const match = range === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(range)
      if (match === null || (match[1] === "" && match[2] === "")) {
        headers["content-length"] = String(size)
        // two chunks: the body really is a stream
        return { status: 200 as const, headers, body: Stream.make(file.bytes.slice(0, 100), file.bytes.slice(100)) }
      }
      const [start, end] = match[1] === ""
        ? [Math.max(0, size - Number(match[2])), size - 1]
        : [Number(match[1]), match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1)]
      if (start >= size || (match[1] === "" && Number(match[2]) === 0)) {
        return yield* Errors.RangeNotSatisfiable.ofSize(
          `range ${range} is not satisfiable: the file has ${size} bytes`,
          size
        )
      }
      headers["content-length"] = String(end - start + 1)
      headers["content-range"] = `bytes ${start}-${end}/${size}`
      return { status: 206 as const, headers, body: Stream.make(file.bytes.slice(start, end + 1)) }
    })
})

/** Every port, faked; the rate limits count in memory (one per build: each test server counts on its own). */
export const PortsFake = Layer.mergeAll(
  KeyServiceFake,
  TaskServiceFake,
  OtherServicesFake,
  FileServiceFake,
  Health.layerAlwaysReady,
  RateLimit.layerMemory
)
