/**
 * Named prepared statements on PostgreSQL (`PreparedStatements.preparing`), on the local server: what a connection
 * has prepared is read from `pg_prepared_statements` on that connection.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import Pg from "pg"
import * as PreparedStatements from "../src/PreparedStatements.js"

const { runPostgres } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

interface Prepared {
  readonly name: string
  readonly statement: string
}

/** Runs `f` with one connection made of `Client`, closed afterwards. */
const withConnection = <A>(Client: typeof Pg.Client, f: (client: Pg.Client) => Promise<A>) =>
  Effect.promise(async () => {
    const client = new Client({ connectionString: Databases.pgUrl() })
    await client.connect()
    try {
      return await f(client)
    } finally {
      await client.end()
    }
  })

/** The statements prepared on the connection (`pg_prepared_statements`, read by a statement with no parameter). */
const prepared = async (client: Pg.Client): Promise<ReadonlyArray<Prepared>> =>
  (await client.query<Prepared>("SELECT name, statement FROM pg_prepared_statements ORDER BY prepare_time")).rows

/** The SQLSTATE of a rejected query. */
const codeOf = (run: Promise<unknown>) =>
  run.then(() => "succeeded", (error: { readonly code?: string }) => error.code ?? "no code")

describe("PreparedStatements", () => {
  it.live.skipIf(!runPostgres)(
    "a text run twice on a connection is prepared by name and answers as unnamed",
    () =>
      Effect.gen(function*() {
        const text = "SELECT $1::int + 1 AS n"
        const run = async (client: Pg.Client) => {
          const answers: Array<number | undefined> = []
          for (const n of [1, 2, 3]) answers.push((await client.query<{ n: number }>(text, [n])).rows[0]?.n)
          return answers
        }
        const [answers, named] = yield* withConnection(
          PreparedStatements.preparing(Pg.Client),
          async (client) => [await run(client), await prepared(client)] as const
        )
        expect(answers).toEqual([2, 3, 4])
        expect(named).toHaveLength(1)
        expect(named[0]?.name).toMatch(/^mediagate_/)
        expect(named[0]?.statement).toBe(text)
        // the plain client prepares nothing by name: the same runs leave the list empty
        const [plainAnswers, plain] = yield* withConnection(
          Pg.Client,
          async (client) => [await run(client), await prepared(client)]
        )
        expect(plainAnswers).toEqual([2, 3, 4])
        expect(plain).toEqual([])
      })
  )

  it.live.skipIf(!runPostgres)(
    "a statement's first run stays unnamed; a connection names at most `limit`",
    () =>
      Effect.gen(function*() {
        const texts = [1, 2, 3, 4].map((k) => `SELECT $1::int * ${k} AS n`)
        const { answers, named, once } = yield* withConnection(
          PreparedStatements.preparing(Pg.Client, { after: 2, limit: 2 }),
          async (client) => {
            // each text once: nothing named yet
            for (const text of texts) await client.query(text, [5])
            const once = await prepared(client)
            const answers: Array<number> = []
            for (const text of texts) answers.push((await client.query<{ n: number }>(text, [5])).rows[0]!.n)
            return { answers, once, named: await prepared(client) }
          }
        )
        expect(once).toEqual([])
        expect(answers).toEqual([5, 10, 15, 20])
        expect(named.map((p) => p.statement)).toEqual(texts.slice(0, 2))
      })
  )

  it.live.skipIf(!runPostgres)(
    "a statement prepared before its table was altered fails once, then is prepared anew",
    () =>
      Effect.gen(function*() {
        const text = "SELECT * FROM prepared_altered WHERE a = $1"
        const { after, before, codes, named } = yield* withConnection(
          PreparedStatements.preparing(Pg.Client),
          async (client) => {
            await client.query("CREATE TEMP TABLE prepared_altered (a int)")
            await client.query("INSERT INTO prepared_altered VALUES (1)")
            await client.query(text, [1])
            const before = (await client.query(text, [1])).rows
            await client.query("ALTER TABLE prepared_altered ADD COLUMN b int")
            // PostgreSQL refuses the prepared statement whose result changed: that run fails, the next prepares anew
            const codes = [await codeOf(client.query(text, [1])), await codeOf(client.query(text, [1]))]
            const after = (await client.query(text, [1])).rows
            return { after, before, codes, named: await prepared(client) }
          }
        )
        expect(before).toEqual([{ a: 1 }])
        expect(codes).toEqual(["0A000", "succeeded"])
        expect(after).toEqual([{ a: 1, b: null }])
        expect(named.filter((p) => p.statement === text)).toHaveLength(2)
      })
  )

  it.live.skipIf(!runPostgres)(
    "a statement that fails for another reason keeps its name",
    () =>
      Effect.gen(function*() {
        const text = "INSERT INTO prepared_unique VALUES ($1)"
        const { codes, named, rows } = yield* withConnection(
          PreparedStatements.preparing(Pg.Client),
          async (client) => {
            await client.query("CREATE TEMP TABLE prepared_unique (a int PRIMARY KEY)")
            const codes = []
            for (const a of [1, 2, 2, 3]) codes.push(await codeOf(client.query(text, [a])))
            const rows = (await client.query("SELECT a FROM prepared_unique ORDER BY a")).rows
            return { codes, named: await prepared(client), rows }
          }
        )
        // 23505: unique_violation
        expect(codes).toEqual(["succeeded", "succeeded", "23505", "succeeded"])
        expect(rows).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }])
        expect(named.filter((p) => p.statement === text)).toHaveLength(1)
      })
  )
})
