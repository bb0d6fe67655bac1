/**
 * A task's media type is the one its endpoint declares in the families registry: every shipped endpoint, and the
 * test-only family's, creates tasks (stored and read) of the media its family states.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Families, Family, Pricing, Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Estimates from "../src/Estimates.js"
import * as FileStore from "../src/FileStore.js"
import { PriceBook } from "../src/Prices.js"
import * as ResultLinks from "../src/ResultLinks.js"
import * as Simulated from "../src/Simulated.js"
import * as Upstreams from "../src/Upstreams.js"
import * as UrlSigner from "../src/UrlSigner.js"
import * as VendorPlanner from "../src/VendorPlanner.js"
import { vendor10 } from "./families/vendor10/index.js"
import { principal } from "./ports.js"

/** The shipped registry with the test-only family. */
const registry = [...Families.registry, vendor10] as const

/** The task service of the registry on memory storage; no worker runs, so tasks stay `pending`. */
const Tasks = TaskService.layer.pipe(
  Layer.provideMerge(TaskStorage.layerMemory()),
  Layer.provide(ResultLinks.layer),
  Layer.provide(Upstreams.layer({}, undefined, registry)),
  Layer.provide(Simulated.layer({ families: registry })),
  Layer.provide(VendorPlanner.layer({ families: registry })),
  Layer.provide(PriceBook.layer(Pricing.defaults(registry))),
  Layer.provide(Estimates.layer),
  Layer.provide(Layer.mergeAll(
    FileStore.layerLocal({ directory: mkdtempSync(join(tmpdir(), "mg-media-types-")) }).pipe(
      Layer.provide(NodeContext.layer)
    ),
    UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("media-types") })
  )),
  Layer.provide(Billing.layerUnmetered)
)

describe("media types", () => {
  it.effect("every endpoint's tasks have the media type its family declares", () =>
    Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const storage = yield* TaskStorage.TaskStorage
      const owner = principal("acct_media")
      const endpoints = Family.endpointsOf(registry)
      expect(endpoints.length).toBe(Catalog.endpointList.length + 1)
      for (const info of endpoints) {
        const endpoint: Family.Endpoint = info
        const model = endpoint.models[0]!
        const ack = yield* tasks.create(owner, {
          endpoint: endpoint.key as never,
          request: { model, input: endpoint.example(model) } as never,
          idempotencyKey: undefined
        })
        const stored = Option.getOrThrow(yield* storage.getById(ack.id))
        expect(stored.mediaType, endpoint.key).toBe(endpoint.mediaType)
        expect((yield* tasks.get(owner, ack.id)).type, endpoint.key).toBe(endpoint.mediaType)
      }
    }).pipe(Effect.provide(Tasks)))
})
