/**
 * The engine's and the webhooks' operator ports as the accounts tests need them (the `AdminService` combines them;
 * their own tests live with the engine, the webhooks and the node package): empty lists, an unknown task, a quiet
 * system.
 */
import { Errors, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AdminService from "../src/AdminService.js"

const empty = Effect.succeed({ data: [], pagination: { cursor: null, hasMore: false, total: 0 } })

/** `AdminTasks` and `AdminWebhooks` with nothing in them. */
export const layer = Layer.merge(
  Layer.succeed(Services.AdminTasks, {
    list: () => empty,
    get: (id) => Effect.fail(new Errors.TaskNotFound({ message: `task ${id} not found` })),
    status: Effect.succeed({
      tasks: {
        by_status: { pending: 0, queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, expired: 0 },
        queue_depth: 0,
        in_flight_upstream: 0,
        due: 0
      },
      nodes: [],
      checkedAt: 0
    })
  }),
  Layer.succeed(Services.AdminWebhooks, {
    deliveries: () => empty,
    backlog: Effect.succeed({ pending: 0, due: 0, failed_last_hour: 0 })
  })
)

/** Adds the `AdminService` (over {@link layer}) to a layer of the accounts services. */
export const withAdmin = <A, E, R>(accounts: Layer.Layer<A, E, R>) =>
  AdminService.layer.pipe(Layer.provide(layer), Layer.provideMerge(accounts))
