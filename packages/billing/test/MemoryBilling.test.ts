import * as Layer from "effect/Layer"
import * as MemoryBilling from "../src/MemoryBilling.js"
import { billingSuite, Tx } from "./BillingSuite.js"

billingSuite("memory", {
  transactional: false,
  layer: (provider) =>
    Layer.merge(
      MemoryBilling.layer.pipe(Layer.provide(provider)),
      Layer.succeed(Tx, { run: (self) => self })
    )
})
