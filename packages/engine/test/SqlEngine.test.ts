import * as Layer from "effect/Layer"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { postgres, runPostgres, sqlite } from "./databases.js"
import { engineSuite } from "./EngineSuite.js"

engineSuite("sqlite", (billing) => SqlTaskStorage.layer().pipe(Layer.provide(billing), Layer.provide(sqlite())))

// without PostgreSQL the availability test of SqlStorage.test.ts says so (and fails under CI=true)
if (runPostgres) {
  engineSuite("postgresql", (billing) => SqlTaskStorage.layer().pipe(Layer.provide(billing), Layer.provide(postgres())))
}
