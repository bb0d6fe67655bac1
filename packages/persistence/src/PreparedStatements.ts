/**
 * Named prepared statements on PostgreSQL, for the statements a connection runs again and again.
 *
 * `@effect/sql-pg` sends every statement unnamed (`client.query(text, values)`), so PostgreSQL parses, analyzes and
 * plans it on every run: for Mediagate's hot statements (the claim, the accept's charge, a task's steps, the outbox
 * read) that was about a third of the database's CPU (docs/performance-notes.md). A `pg` pool takes the `Client`
 * class its connections are made of: {@link preparing} gives one that names a statement once its text has run
 * {@link Options.after} times on the connection. `pg` then parses it once per connection, and PostgreSQL keeps its
 * plan as for any prepared statement (custom plans first, then a generic plan when that costs no more).
 *
 * - Statements without parameters (`BEGIN`, `COMMIT`, DDL) and the other forms of `query` (a config object, a
 *   cursor) pass through unchanged.
 * - At most {@link Options.limit} named statements per connection: texts that differ on every run (multi-row
 *   inserts of every batch size) stay unnamed once it is reached. The texts being counted are forgotten when more
 *   than `4 × limit` are.
 * - A named statement that PostgreSQL refuses as prepared (`cached plan must not change result type` after a table
 *   it reads was altered by a migration, SQLSTATE `0A000`; or not prepared on the server, `26000`) fails that once
 *   and is named afresh: its next run prepares it anew. Other failures (a constraint, a conflict) keep its name.
 * - A pooler between the server and PostgreSQL must keep prepared statements per client (PgBouncer 1.21 and later
 *   with `max_prepared_statements`); otherwise turn them off (`MEDIAGATE_DB_PREPARED_STATEMENTS=false`).
 *
 * @since 0.1.0
 */

/**
 * How statements are named.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Runs of the same text on a connection before it is named (default 2: its first run stays unnamed). */
  readonly after?: number
  /** Named statements a connection keeps at most (default 200). */
  readonly limit?: number
}

/**
 * What {@link preparing} uses of a `pg.Client` class: `query(text, values, callback?)` and
 * `query({ name, text, values }, callback?)` (a promise without the callback).
 *
 * @since 0.1.0
 * @category models
 */

export type ClientClass = abstract new(...args: Array<any>) => { query(...args: Array<any>): unknown }

type Callback = (error: Error | null, result?: unknown) => void

/** A failure of the prepared statement itself (see the module's comment). */
const isStale = (error: Error | null) => {
  const code = (error as { readonly code?: unknown } | null)?.code
  return code === "0A000" || code === "26000"
}

/**
 * The `pg.Client` class `Client` naming the statements run often on each connection (see the module's comment), for
 * a pool's `Client` option: `new Pool({ ..., Client: PreparedStatements.preparing(pg.Client) })`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const preparing = <C extends ClientClass>(Client: C, options: Options = {}): C => {
  const after = Math.max(1, options.after ?? 2)
  const limit = Math.max(0, options.limit ?? 200)
  // names unique in the process: a statement named afresh never meets its old name on the server
  let sequence = 0
  abstract class Preparing extends Client {
    /** Per text: its runs so far (a number) or its name (a string). */
    readonly #statements = new Map<string, number | string>()
    #named = 0

    override query(...args: Array<unknown>): unknown {
      const [text, values, callback] = args
      if (
        typeof text !== "string" || !Array.isArray(values) || values.length === 0 ||
        (callback !== undefined && typeof callback !== "function") || args.length > 3
      ) {
        return super.query(...args)
      }
      const name = this.#nameOf(text)
      if (name === undefined) return super.query(...args)
      const config = { name, text, values }
      if (callback === undefined) {
        return (super.query(config) as Promise<unknown>).catch((error: Error) => {
          this.#failed(text, name, error)
          throw error
        })
      }
      return super.query(config, (error: Error | null, result: unknown) => {
        this.#failed(text, name, error)
        ;(callback as Callback)(error, result)
      })
    }

    /** After a run of `name`: a statement refused as prepared is named afresh (unnamed past the limit). */
    #failed(text: string, name: string, error: Error | null) {
      if (isStale(error) && this.#statements.get(text) === name) this.#statements.set(text, this.#newName() ?? 0)
    }

    /** The text's name, given on its `after`-th run while there is room; `undefined` while it runs unnamed. */
    #nameOf(text: string): string | undefined {
      const seen = this.#statements.get(text)
      if (typeof seen === "string") return seen
      const runs = (seen ?? 0) + 1
      const name = runs >= after ? this.#newName() : undefined
      if (name === undefined && this.#statements.size >= 4 * limit) this.#forgetCounts()
      this.#statements.set(text, name ?? runs)
      return name
    }

    /** A new name, while the connection has fewer than `limit`. */
    #newName(): string | undefined {
      if (this.#named >= limit) return undefined
      this.#named++
      return `mediagate_${(sequence++).toString(36)}`
    }

    /** Forgets the counts (never the names: those statements stay prepared on the connection). */
    #forgetCounts() {
      for (const [text, seen] of this.#statements) if (typeof seen === "number") this.#statements.delete(text)
    }
  }
  return Preparing as unknown as C
}
