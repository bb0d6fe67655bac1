/**
 * `TaskReads` on SQL (SQLite, PostgreSQL): a task by id (through the read connection when there is one), pages
 * with exact totals from the counters, the in-flight counts and the operators' overview.
 */
import type { Fragment } from "@effect/sql/Statement"
import { Task } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Record from "effect/Record"
import { listFilter, type ListPage, type ListQuery, ownedBy } from "../../TaskReads.js"
import { TaskReads } from "../../TaskReads.js"
import type { SqlContext } from "./context.js"
import { countedBy, hasNul, persistence, prefixEnd } from "./rows.js"
import { activeList, pgTables } from "./schema.js"
import * as Search from "./search.js"

/** Builds the port on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { ACTIVE, NOW, pg, prefix, readTask, rows, sql, t, withClock } = context
    /**
     * The environment's column in a query of the tasks that has a narrower index to read than (account, environment,
     * id): a status, provider or model filter. SQLite, without statistics, would walk that index and test the filter
     * on every row, over every task of the account when few match; the unary `+` keeps the column out of its choice
     * of index, and the environment is checked on the rows the narrower index finds. PostgreSQL plans on statistics.
     */
    const environmentBeside = sql.literal(pg ? "environment" : "+environment")
    const searchCounts = sql(pgTables(prefix).searchCounts)
    /** `key` below the cursor's id (ids hold no NUL: a cursor "ab\0..." stands just above "ab": `key <= "ab"`). */
    const below = (key: Fragment, beforeId: string) => {
      const nul = beforeId.indexOf("\u0000")
      return nul < 0 ? sql`${key} < ${beforeId}` : sql`${key} <= ${beforeId.slice(0, nul)}`
    }
    /**
     * PostgreSQL: the number of an account's tasks with a word starting with `word`, from the word counts (a count
     * in the search table reads a page of it per match): the counts of the words of the range whose previous word
     * is below it, one a task (search.ts).
     */
    const wordCount = (accountId: string, environment: ListQuery["environment"], word: string) => {
      const end = Search.codePointsAfter(word)
      const where = [
        sql`account_id = ${accountId}`,
        sql.in("environment", Search.environmentsOf(environment)),
        sql`word >= ${word}`,
        sql`prev < ${word}`
      ]
      if (end !== undefined) where.push(sql`word < ${end}`)
      return sql`SELECT COALESCE(SUM(n), 0) AS n FROM ${searchCounts} WHERE ${sql.and(where)}`
    }
    /** Matches of a prompt search that PostgreSQL takes from its index and sorts (see `searched`). */
    const fewMatches = 5_000
    /**
     * A page of the tasks whose prompt has `words` (and that pass `filters`), with its total: the search table's
     * matches joined to their tasks, newest first. PostgreSQL: by id. SQLite: by rowid (the order tasks were stored
     * in), the page after a cursor from the rowid of its task (or of the next task stored, if it is gone). With no
     * filter but the account and environment (terms of the match), the total counts the search table alone.
     */
    const searched = (
      accountId: string | undefined,
      query: ListQuery,
      words: ReadonlyArray<string>,
      filters: { readonly scope: ReadonlyArray<Fragment>; readonly others: ReadonlyArray<Fragment> },
      limit: number
    ) =>
      Effect.gen(function*() {
        const beforeId = query.beforeId
        const search = t.search
        const match = pg
          ? sql`${search}.document @@ CAST(${Search.tsQuery(words, accountId, query.environment)} AS tsquery)`
          : sql`${search} MATCH ${Search.ftsQuery(words, accountId, query.environment)}`
        const key = pg ? sql`${search}.task_id` : sql`${search}.rowid`
        const joined = sql`${search} JOIN ${t.tasks} ON ${t.tasks}.${sql(pg ? "id" : "rowid")} = ${key}`
        // an account's scope (it and its environment, or both) is a term of the match: the tasks' rows are read only
        // for the other filters, and for the page itself; without an account the environment stays a filter
        const rest = accountId === undefined ? [...filters.scope, ...filters.others] : filters.others
        const page = [...rest, match]
        if (beforeId !== undefined) {
          // SQLite: below the rowid of the cursor's task, or of the next one stored if it is gone
          const atCursor = sql`SELECT rowid FROM ${t.tasks} WHERE NOT (${below(sql`id`, beforeId)}) ORDER BY id LIMIT 1`
          page.push(pg ? below(key, beforeId) : sql`${key} < COALESCE((${atCursor}), 9223372036854775807)`)
        }
        const total = (rest.length === 0
          ? (pg && accountId !== undefined && words.length === 1
            ? wordCount(accountId, query.environment, words[0]!)
            : sql`SELECT COUNT(*) AS n FROM ${search} WHERE ${match}`)
          : sql`SELECT COUNT(*) AS n FROM ${joined} WHERE ${sql.and([...rest, match])}`).pipe(
            Effect.flatMap(rows.count.all),
            Effect.map(([counted]) => counted?.n ?? 0)
          )
        const newest = sql`SELECT ${t.tasks}.* FROM ${joined} WHERE ${sql.and(page)} ORDER BY ${key} DESC
          LIMIT ${limit + 1}`
        // PostgreSQL walks the search table's ids from the newest, testing each document: quick when matches are
        // common, slow when they are few (a rare word: thousands of rows for a page); up to `fewMatches` (and no
        // filter but the scope) the matches are taken from the index (a materialized CTE: the planner cannot walk the
        // ids instead) and the newest joined to their tasks
        const newestMatched = sql`SELECT matched_id FROM matched ORDER BY matched_id DESC LIMIT ${limit + 1}`
        const few = sql`WITH matched AS MATERIALIZED (SELECT ${key} AS matched_id FROM ${search} WHERE ${sql.and(page)})
          SELECT ${t.tasks}.* FROM (${newestMatched}) AS newest JOIN ${t.tasks} ON ${t.tasks}.id = newest.matched_id
          ORDER BY newest.matched_id DESC`
        const [items, n] = pg
          ? yield* Effect.flatMap(
            total,
            (n) =>
              Effect.map(
                Effect.flatMap(n <= fewMatches && rest.length === 0 ? few : newest, rows.task.all),
                (items) => [items, n] as const
              )
          )
          : yield* Effect.all([Effect.flatMap(newest, rows.task.all), total], { concurrency: 2 })
        return { items: items.slice(0, limit), hasMore: items.length > limit, total: n }
      })

    /** A list's filters besides its scope (account, environment) and words. */
    const filtersOf = (query: Omit<ListQuery, "beforeId" | "limit">) => {
      const filters: Array<Fragment> = []
      if (query.status !== undefined) filters.push(sql`status = ${query.status}`)
      if (query.provider !== undefined) filters.push(sql`provider = ${query.provider}`)
      if (query.model !== undefined) filters.push(sql`model = ${query.model}`)
      // created_at holds whole milliseconds: `>= 1.5` is `>= 2`, `< 1.5` is `< 2`
      if (query.createdAfter !== undefined) filters.push(sql`created_at >= ${Math.ceil(query.createdAfter)}`)
      if (query.createdBefore !== undefined) filters.push(sql`created_at < ${Math.ceil(query.createdBefore)}`)
      if (query.idPrefix !== undefined && query.idPrefix !== "") {
        filters.push(sql`id >= ${query.idPrefix}`)
        const end = prefixEnd(query.idPrefix)
        if (end !== undefined) filters.push(sql`id < ${end}`)
      }
      return filters
    }

    /**
     * A page of an account's changes: their keys from the changes index (account, `changed_at`, id; read from the
     * index alone), then the rows of those the reader does not know, with the filters; the prompt words are tested
     * on the rows read (a stream reads a few changes at a time: no search table needed).
     */
    const changes: TaskReads["Type"]["changes"] = (accountId, query) =>
      Effect.gen(function*() {
        const limit = Math.max(0, Math.floor(query.limit))
        if (limit === 0 || hasNul(accountId, query.status, query.provider, query.model, query.idPrefix)) {
          return { items: [], keys: [], next: undefined }
        }
        // the index range starts at the later of `since` and the keyset: a long catch-up reads each key once
        const after = query.after !== undefined && !hasNul(query.after.id) ? query.after : undefined
        const from = Math.floor(Math.max(query.since, after?.changedAt ?? query.since))
        const range = [sql`account_id = ${accountId}`, sql`changed_at >= ${from}`]
        if (after !== undefined) {
          range.push(sql`(changed_at > ${after.changedAt} OR (changed_at = ${after.changedAt} AND id > ${after.id}))`)
        }
        const keys = yield* sql`SELECT changed_at, id FROM ${t.tasks} WHERE ${sql.and(range)}
          ORDER BY changed_at, id LIMIT ${limit}`.pipe(Effect.flatMap(rows.changeKey.all))
        const last = keys.length === limit ? keys.at(-1) : undefined
        const next = last === undefined ? undefined : { changedAt: last.changedAt, id: last.id }
        const wanted = query.known === undefined ? keys : keys.filter((key) => !query.known!(key))
        if (wanted.length === 0) return { items: [], keys, next }
        const where = [
          sql.in("id", wanted.map((key) => key.id)),
          sql`environment = ${query.environment}`,
          ...filtersOf(query)
        ]
        const read = yield* sql`SELECT * FROM ${t.tasks} WHERE ${sql.and(where)}`.pipe(Effect.flatMap(rows.task.all))
        // in the keys' order; a task changed again since its key was read is left to the next read
        const byId = new Map(read.map((task) => [task.id, task]))
        const passes = listFilter({ words: query.words })
        const items = wanted.flatMap(({ changedAt, id }) => {
          const task = byId.get(id)
          return task !== undefined && task.changedAt === changedAt && passes(task) ? [task] : []
        })
        return { items, keys, next }
      }).pipe(persistence("changes"))

    const list: TaskReads["Type"]["list"] = (accountId, query) =>
      Effect.gen(function*() {
        const limit = Math.max(0, Math.floor(query.limit))
        const empty: ListPage = { items: [], hasMore: false, total: 0 }
        if (hasNul(accountId, query.status, query.provider, query.model, query.idPrefix, ...(query.words ?? []))) {
          return empty
        }
        // no account: every account's tasks (operators); the totals then sum every account's counts (and no
        // environment: both environments')
        const scopeWith = (environment: Fragment): Array<Fragment> => [
          ...(accountId === undefined ? [] : [sql`account_id = ${accountId}`]),
          ...(query.environment === undefined ? [] : [sql`${environment} = ${query.environment}`])
        ]
        // the count rows of the scope: the account's (or all), of the environment (or both)
        const scope = scopeWith(sql.literal("environment"))
        const others = filtersOf(query)
        // the tasks' rows: a status, provider or model filter has an (account, ..., id) index of its own to read
        const filtered = query.status !== undefined || query.provider !== undefined || query.model !== undefined
        const filters = filtered ? [...scopeWith(environmentBeside), ...others] : [...scope, ...others]
        const words = query.words ?? []
        if (words.length > 0) return yield* searched(accountId, query, words, { scope, others }, limit)
        const page = [...filters]
        if (query.beforeId !== undefined) page.push(below(sql`id`, query.beforeId))
        // the total: from the counts (a few rows, whatever the account's size) or by counting the matching rows
        const counted = countedBy(query)
        const total = counted === undefined
          ? sql`SELECT COUNT(*) AS n FROM ${t.tasks} WHERE ${sql.and(filters)}`.pipe(Effect.flatMap(rows.count.single))
          : (counted.dim === "status"
            ? sql`SELECT COALESCE(SUM(CASE WHEN dim = 'status_in' THEN n ELSE -n END), 0) AS n FROM ${t.counts}
              WHERE ${sql.and([...scope, sql`dim IN ('status_in', 'status_out')`, sql`value = ${counted.value}`])}`
            : sql`SELECT COALESCE(SUM(n), 0) AS n FROM ${t.counts}
              WHERE ${sql.and([...scope, sql`dim = ${counted.dim}`, sql`value = ${counted.value}`])}`).pipe(
              Effect.flatMap(rows.counted.single)
            )
        const [items, { n }] = yield* Effect.all([
          sql`SELECT * FROM ${t.tasks} WHERE ${sql.and(page)} ORDER BY id DESC LIMIT ${limit + 1}`.pipe(
            Effect.flatMap(rows.task.all)
          ),
          total
        ], { concurrency: 2 })
        return { items: items.slice(0, limit), hasMore: items.length > limit, total: n }
      }).pipe(persistence("list"))

    /** The in-flight counts (added for the rate limits): the account's from the counters, the key's by the index. */
    const activeCounts: TaskReads["Type"]["activeCounts"] = (accountId, keyId) =>
      sql<{ readonly account: number | string | null; readonly key: number | string | null }>`SELECT
  (SELECT COALESCE(SUM(CASE WHEN dim = 'status_in' THEN n ELSE -n END), 0) FROM ${t.counts}
    WHERE account_id = ${accountId} AND dim IN ('status_in', 'status_out') AND value IN ${
        sql.literal(activeList)
      }) AS account,
  (SELECT COUNT(*) FROM ${t.tasks} WHERE account_id = ${accountId} AND ${ACTIVE} AND key_id = ${keyId}) AS ${
        sql("key")
      }`.pipe(
        Effect.map(([row]) => ({ account: Number(row?.account ?? 0), key: Number(row?.key ?? 0) })),
        persistence("activeCounts")
      )

    // the account's pending tasks by the status index, up to this one (ids grow with time)
    /** The pending tasks at or before `task`: a range of the (account, status, id) index ({@link environmentBeside}). */
    const pendingPosition: TaskReads["Type"]["pendingPosition"] = (task) =>
      sql`SELECT COUNT(*) AS n FROM ${t.tasks} WHERE account_id = ${task.accountId} AND status = 'pending'
        AND id <= ${task.id} AND ${environmentBeside} = ${task.environment}`.pipe(
        Effect.flatMap(rows.count.all),
        Effect.map(([row]) => Math.max(1, row?.n ?? 1)),
        persistence("pendingPosition")
      )

    /**
     * Operators: every account's tasks per state from the counters (summed over accounts and shards) and
     * the active tasks due now and not leased (the due index).
     */
    const overview: TaskReads["Type"]["overview"] = Effect.gen(function*() {
      const clock = yield* withClock
      const [counted, [due]] = yield* Effect.all([
        sql`SELECT value, SUM(CASE WHEN dim = 'status_in' THEN n ELSE -n END) AS n FROM ${t.counts}
          WHERE dim IN ('status_in', 'status_out') GROUP BY value`.pipe(Effect.flatMap(rows.byStatus.all)),
        sql`${clock} SELECT COUNT(*) AS n FROM ${t.tasks}
          WHERE ${ACTIVE} AND next_run_at <= ${NOW} AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})`.pipe(
          Effect.flatMap(rows.count.all)
        )
      ], { concurrency: 2 })
      const byStatus = Object.fromEntries(Task.taskStatuses.map((status) => [status, 0])) as Record<
        Task.TaskStatus,
        number
      >
      for (const { n, value } of counted) if (value in byStatus) byStatus[value as Task.TaskStatus] = n
      return { byStatus, due: due?.n ?? 0 }
    }).pipe(persistence("overview"))

    const getOperation = persistence("get")
    const getByIdOperation = persistence("getById")

    return TaskReads.of({
      get: (accountId, id, environment) =>
        hasNul(accountId, id)
          ? Effect.succeedNone
          : readTask(id).pipe(Effect.map(Option.filter((task) => ownedBy(task, accountId, environment))), getOperation),
      getById: (id) => hasNul(id) ? Effect.succeedNone : getByIdOperation(readTask(id)),
      list,
      changes,
      activeCounts,
      pendingPosition,
      overview
    })
  })
