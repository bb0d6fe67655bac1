/**
 * The webhook storage in memory: registrations, deliveries, the attempt log, the idempotency records and the outbox
 * cursor in maps of one process (nothing survives a restart).
 */
import type { Errors } from "@mediagate/contract"
import type { OutboxEntry } from "@mediagate/engine/TaskOutbox"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WebhookStore } from "../../WebhookStore.js"
import type {
  AttemptResult,
  AttemptRow,
  ClaimedDelivery,
  CreateResult,
  DeliveryRow,
  FannedOut,
  FanOutLease,
  Settlement,
  WebhookRow
} from "../store/records.js"
import { attemptRow, fannedRows, newRow, reused, settled } from "../store/rows.js"

/** Storage in memory; operations run one at a time (a semaphore plays the transaction). Clock: Effect `Clock`. */
export const makeMemory: Effect.Effect<WebhookStore["Type"]> = Effect.gen(function*() {
  const webhooks = new Map<string, WebhookRow>()
  const deliveries = new Map<string, DeliveryRow>()
  const log: Array<AttemptRow> = []
  const idempotency = new Map<string, { fingerprint: string; webhookId: string; createdAt: number }>()
  let cursor: string | undefined = undefined
  const lock = yield* Effect.makeSemaphore(1)
  const tx = <A, E>(effect: Effect.Effect<A, E>) => lock.withPermits(1)(effect)
  const sync = <A>(f: () => A) => tx(Effect.sync(f))
  const live = (row: WebhookRow | undefined, accountId: string): Option.Option<WebhookRow> =>
    Option.filter(Option.fromNullable(row), (w) => w.accountId === accountId && w.deletedAt === null)
  const ofWebhook = (accountId: string | undefined, webhookId: string | undefined) =>
    [...deliveries.values()].filter((d) =>
      (accountId === undefined || d.accountId === accountId) && (webhookId === undefined || d.webhookId === webhookId)
    )

  const settleOne = (id: string, fence: number, attempt: AttemptResult | undefined, settlement: Settlement) => {
    const row = deliveries.get(id)
    if (row === undefined || row.fence !== fence || row.leaseOwner === null || row.status !== "pending") {
      return false
    }
    const next = settled(row, attempt, settlement)
    deliveries.set(id, next)
    if (attempt !== undefined) log.push(attemptRow(id, next.attempts, attempt))
    if (settlement.status === "failed" && settlement.disableWebhook === true && row.webhookId !== null) {
      const webhook = webhooks.get(row.webhookId)
      if (webhook !== undefined) webhooks.set(webhook.id, { ...webhook, enabled: false })
    }
    return true
  }

  const fanOutLeased = (
    expected: string | undefined,
    next: string,
    entries: ReadonlyArray<OutboxEntry>,
    now: number,
    lease?: FanOutLease
  ) =>
    tx(Effect.suspend((): Effect.Effect<Option.Option<FannedOut>, PersistenceError> => {
      if (cursor !== expected) return Effect.succeedNone
      // the events are read before the cursor moves: one that cannot be read moves nothing
      return Effect.map(fannedRows(entries, [...webhooks.values()], now, lease), ({ leased, rows }) => {
        cursor = next
        for (const row of rows) deliveries.set(row.id, row)
        return Option.some({ created: rows.length, leased })
      })
    }))

  const attemptsOf = (deliveryIds: ReadonlyArray<string>) =>
    sync((): ReadonlyArray<AttemptRow> => {
      const wanted = new Set(deliveryIds)
      return log.filter((a) => wanted.has(a.deliveryId))
    })

  const service: WebhookStore["Type"] = {
    now: Clock.currentTimeMillis,
    createWebhook: (webhook, claim) =>
      tx(Effect.suspend((): Effect.Effect<CreateResult, Errors.IdempotencyKeyReused> => {
        if (claim !== undefined) {
          const slot = `${webhook.accountId}\u0000${claim.key}`
          const previous = idempotency.get(slot)
          const verdict = IdempotencyWindow.judge(previous, claim)
          if (verdict === "Reused") return Effect.fail(reused())
          const original = verdict === "Replay" && previous !== undefined ? webhooks.get(previous.webhookId) : undefined
          if (original !== undefined) return Effect.succeed({ _tag: "Replayed", webhook: original } as const)
          idempotency.set(slot, { fingerprint: claim.fingerprint, webhookId: webhook.id, createdAt: webhook.createdAt })
        }
        webhooks.set(webhook.id, webhook)
        return Effect.succeed({ _tag: "Created", webhook } as const)
      })),
    listWebhooks: (accountId) =>
      sync(() =>
        [...webhooks.values()]
          .filter((w) => w.accountId === accountId && w.deletedAt === null)
          .sort((a, b) => (a.id < b.id ? -1 : 1))
      ),
    getWebhook: (accountId, id) => sync(() => live(webhooks.get(id), accountId)),
    getWebhookById: (id) => sync(() => Option.fromNullable(webhooks.get(id))),
    removeWebhook: (accountId, id, now) =>
      sync(() => {
        const row = live(webhooks.get(id), accountId)
        if (Option.isNone(row)) return false
        webhooks.set(id, { ...row.value, enabled: false, deletedAt: now })
        return true
      }),
    setEnabled: (id, enabled) =>
      sync(() => {
        const row = webhooks.get(id)
        if (row !== undefined) webhooks.set(id, { ...row, enabled })
      }),
    listDeliveries: (accountId, webhookId, query) =>
      sync(() => {
        const all = ofWebhook(accountId, webhookId)
          .filter((d) => query.status === undefined || d.status === query.status)
          .sort((a, b) => (a.id < b.id ? 1 : -1))
        return MemoryStore.page(all, query.beforeId, Math.max(0, Math.floor(query.limit)))
      }),
    getDelivery: (accountId, webhookId, id) =>
      sync(() =>
        Option.filter(
          Option.fromNullable(deliveries.get(id)),
          (d) => d.accountId === accountId && d.webhookId === webhookId
        )
      ),
    deliveriesOfEvent: (eventId) =>
      sync(() => [...deliveries.values()].filter((d) => d.eventId === eventId).sort((a, b) => (a.id < b.id ? -1 : 1))),
    addDelivery: (delivery, now, options) =>
      sync(() => {
        const row = newRow(delivery, now)
        deliveries.set(row.id, row)
        if (options.enableWebhook && delivery.webhookId !== null) {
          const webhook = webhooks.get(delivery.webhookId)
          if (webhook !== undefined && webhook.deletedAt === null) {
            webhooks.set(webhook.id, { ...webhook, enabled: true })
          }
        }
        return row
      }),
    readCursor: sync(() => cursor),
    fanOut: (expected, next, entries, now) =>
      Effect.map(fanOutLeased(expected, next, entries, now), Option.map((fanned) => fanned.created)),
    fanOutLeased,
    claimDue: (owner, limit, leaseMs, now) =>
      sync(() => {
        const due = [...deliveries.values()]
          .filter((d) =>
            d.status === "pending" && d.nextAttemptAt !== null && d.nextAttemptAt <= now &&
            (d.leaseExpiresAt === null || d.leaseExpiresAt <= now)
          )
          .sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || (a.id < b.id ? -1 : 1))
          .slice(0, Math.max(0, Math.floor(limit)))
        return due.map((d): ClaimedDelivery => {
          const claimed = { ...d, fence: d.fence + 1, leaseOwner: owner, leaseExpiresAt: now + leaseMs }
          deliveries.set(d.id, claimed)
          const webhook = d.webhookId === null ? undefined : webhooks.get(d.webhookId)
          return {
            ...claimed,
            webhook: webhook === undefined
              ? null
              : { secret: webhook.secret, enabled: webhook.enabled, deletedAt: webhook.deletedAt }
          }
        })
      }),
    settle: (id, fence, attempt, settlement) => sync(() => settleOne(id, fence, attempt, settlement)),
    settleAll: (settles) =>
      sync(() =>
        settles.map(({ attempt, delivery, settlement }) => settleOne(delivery.id, delivery.fence, attempt, settlement))
      ),
    attempts: (deliveryId) => attemptsOf([deliveryId]),
    attemptsOf,
    nextDueAt: sync(() => {
      const times = [...deliveries.values()]
        .filter((d) => d.status === "pending" && d.nextAttemptAt !== null)
        .map((d) => Math.max(d.nextAttemptAt!, d.leaseExpiresAt ?? 0))
      return times.length === 0 ? Option.none() : Option.some(Math.min(...times))
    }),
    releaseAll: (owner) =>
      sync(() =>
        MemoryStore.updateWhere(
          deliveries,
          (d) => d.leaseOwner === owner && d.status === "pending",
          (d) => ({ ...d, leaseOwner: null, leaseExpiresAt: null })
        )
      ),
    pruneDeliveries: (before) =>
      sync(() => {
        const ids = new Set(
          [...deliveries.values()].filter((d) => d.status !== "pending" && d.createdAt < before).map((d) => d.id)
        )
        for (const id of ids) deliveries.delete(id)
        const kept = log.filter((attempt) => !ids.has(attempt.deliveryId))
        log.splice(0, log.length, ...kept)
        return ids.size
      }),
    pruneIdempotency: (before) =>
      sync(() => MemoryStore.deleteWhere(idempotency, (record) => record.createdAt < before)),
    backlog: (now, failedSince) =>
      sync(() => {
        const lastAttempt = new Map<string, number>()
        for (const attempt of log) {
          lastAttempt.set(attempt.deliveryId, Math.max(attempt.at, lastAttempt.get(attempt.deliveryId) ?? attempt.at))
        }
        let pending = 0
        let due = 0
        let failed = 0
        for (const d of deliveries.values()) {
          if (d.status === "pending") {
            pending++
            if (d.nextAttemptAt !== null && d.nextAttemptAt <= now) due++
          } else if (d.status === "failed" && (lastAttempt.get(d.id) ?? -Infinity) >= failedSince) {
            failed++
          }
        }
        return { pending, due, failedSince: failed }
      })
  }
  return service
})
