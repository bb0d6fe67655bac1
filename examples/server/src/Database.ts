/**
 * The database of the example server: PostgreSQL when `DATABASE_URL` is set (several processes may share it),
 * otherwise SQLite in `MEDIAGATE_DATA_DIR` (default `./data/mediagate.db`).
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdirSync } from "node:fs"
import { join } from "node:path"

/** Where the database is. */
export type Location =
  | { readonly _tag: "Postgres"; readonly url: string }
  | { readonly _tag: "Sqlite"; readonly file: string }

/** The database location from the environment (decisions.md §10). */
export const location: Config.Config<Location> = Config.all({
  url: Config.option(Config.string("DATABASE_URL")),
  dataDir: Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data"))
}).pipe(Config.map(({ dataDir, url }): Location =>
  Option.isSome(url) && url.value.trim() !== ""
    ? { _tag: "Postgres", url: url.value }
    : { _tag: "Sqlite", file: join(dataDir, "mediagate.db") }
))

/** The SQL client of a location. */
export const layerOf = (where: Location): Layer.Layer<SqlClient.SqlClient, unknown> =>
  where._tag === "Postgres"
    ? PgClient.layer({ url: Redacted.make(where.url) })
    : Layer.unwrapEffect(Effect.sync(() => {
      mkdirSync(join(where.file, ".."), { recursive: true })
      return SqliteClient.layer({ filename: where.file })
    }))
