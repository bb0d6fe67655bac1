/**
 * Prompt search of the task list: the words of a task's prompt indexed with its account and environment, and the
 * match of a list's words, in `<prefix>task_search` kept by triggers on the tasks table. SQLite: an FTS5 table
 * (contentless, its rows the tasks' rowids); PostgreSQL: a table of task ids and `tsvector` documents with a GIN
 * index. A word matches the start of a word of the prompt; the account and environment are one more term of the
 * document, so a count reads only the postings of the caller's scope.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import type { TaskRecord } from "../../TaskRecord.js"

/** A task row's scope on PostgreSQL, its document's first lexeme: the account id, a space, the environment. */
const pgScope = (row: string) => `${row}.account_id || ' ' || ${row}.environment`

/** Whether a task row has a prompt, on PostgreSQL (an input that is not JSON raises `invalid_text_representation`). */
const pgPrompted = (row: string) => `jsonb_typeof(${row}.input::jsonb -> 'prompt') = 'string'`

/** A task row's prompt words on PostgreSQL (the `simple` configuration). */
const pgWords = (row: string) => `to_tsvector('simple'::regconfig, ${row}.input::jsonb ->> 'prompt')`

/** The indexed document on PostgreSQL: the scope (`pgScope`) as one lexeme, then the prompt's `words`. */
const pgDocumentOf = (scope: string, words: string) => `array_to_tsvector(ARRAY[${scope}]) || ${words}`

/** The indexed document of a task row on PostgreSQL. */
const pgDocument = (row: string) => pgDocumentOf(pgScope(row), pgWords(row))

/** PostgreSQL: the statement making (or replacing) the search trigger function `<tasks>_search_<name>`. */
const pgTriggerFunction = (tasks: string, name: string, body: string) =>
  `CREATE OR REPLACE FUNCTION ${tasks}_search_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${body}
  RETURN NULL;
END
$$`

/** A task's scope on SQLite: one token of letters and digits (the account id in hex, then the environment). */
const sqliteScope = (row: string) => `'s' || hex(${row}.account_id) || 'x' || ${row}.environment`

const hex = (text: string) => Buffer.from(text, "utf8").toString("hex")

/** The environments a search covers: the one given, or both. */
export const environmentsOf = (environment: TaskRecord["environment"] | undefined) =>
  environment === undefined ? ["live", "test"] : [environment]

/** `terms` joined by `or`, in parentheses when there are several. */
const anyOf = (terms: ReadonlyArray<string>, or: string) =>
  terms.length === 1 ? terms[0]! : `(${terms.join(` ${or} `)})`

/** An FTS5 string (double quotes doubled). */
const ftsString = (text: string) => `"${text.replaceAll("\"", "\"\"")}"`

/**
 * The FTS5 query of `words` in the scope (none: every account's tasks): `scope : "s<hex>x<env>" AND prompt :
 * "word"* AND ...`.
 */
export const ftsQuery = (
  words: ReadonlyArray<string>,
  accountId: string | undefined,
  environment: TaskRecord["environment"] | undefined
): string => {
  const terms = words.map((word) => `prompt : ${ftsString(word)}*`)
  if (accountId === undefined) return terms.join(" AND ")
  const scope = environmentsOf(environment).map((env) => `scope : ${ftsString(`s${hex(accountId)}x${env}`)}`)
  return [anyOf(scope, "OR"), ...terms].join(" AND ")
}

/** A `tsquery` lexeme, quoted (quotes doubled, backslashes escaped). */
const lexeme = (text: string) => `'${text.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`

/** The `tsquery` text of `words` (each a prefix) in the scope (none: every account's tasks). */
export const tsQuery = (
  words: ReadonlyArray<string>,
  accountId: string | undefined,
  environment: TaskRecord["environment"] | undefined
): string => {
  const terms = words.map((word) => `${lexeme(word)}:*`)
  if (accountId === undefined) return terms.join(" & ")
  const scope = environmentsOf(environment).map((env) => lexeme(`${accountId} ${env}`))
  return [anyOf(scope, "|"), ...terms].join(" & ")
}

/**
 * The migration (`t`: the tables' names): the search table filled from the stored tasks, and the triggers that keep
 * it (an insert adds a task, a delete removes it; the storage never changes a task's account, environment or input,
 * hand-written SQL that does indexes it again).
 */
export const createSearch = (t: { readonly tasks: string; readonly search: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { id, pg } = SqlStore.columns(sql)
    const search = t.search
    if (pg) {
      // a narrow table of its own (a count reads few pages), kept by statement triggers (one insert per batch)
      yield* sql.unsafe(`CREATE TABLE ${search} (task_id ${id} PRIMARY KEY NOT NULL, document tsvector NOT NULL)`)
      yield* sql.unsafe(`CREATE INDEX ${search}_document_idx ON ${search} USING GIN (document)`)
      yield* sql.unsafe(`INSERT INTO ${search} (task_id, document)
  SELECT tasks.id, ${pgDocument("tasks")} FROM ${t.tasks} AS tasks WHERE ${pgPrompted("tasks")}`)
      const fn = (name: string, body: string) => sql.unsafe(pgTriggerFunction(t.tasks, name, body))
      yield* fn(
        "insert",
        `INSERT INTO ${search} (task_id, document) SELECT n.id, ${pgDocument("n")} FROM new_rows AS n WHERE ${
          pgPrompted("n")
        };`
      )
      yield* fn("delete", `DELETE FROM ${search} WHERE task_id IN (SELECT id FROM old_rows);`)
      // an input that is not JSON (hand-written SQL) leaves the task out of the index, the update goes through
      yield* fn(
        "update",
        `DELETE FROM ${search} WHERE task_id = OLD.id;
  BEGIN
    IF ${pgPrompted("NEW")} THEN
      INSERT INTO ${search} (task_id, document) VALUES (NEW.id, ${pgDocument("NEW")});
    END IF;
  EXCEPTION WHEN invalid_text_representation THEN
    NULL;
  END;`
      )
      yield* fn("truncate", `DELETE FROM ${search};`)
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_insert AFTER INSERT ON ${t.tasks}
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${t.tasks}_search_insert()`)
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_delete AFTER DELETE ON ${t.tasks}
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${t.tasks}_search_delete()`)
      // columns the storage never changes (hand-written SQL): the task indexed again; no cost for the storage's own
      // updates, which never set them
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_update AFTER UPDATE OF id, account_id, environment, input
  ON ${t.tasks} FOR EACH ROW EXECUTE FUNCTION ${t.tasks}_search_update()`)
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_truncate AFTER TRUNCATE ON ${t.tasks}
  FOR EACH STATEMENT EXECUTE FUNCTION ${t.tasks}_search_truncate()`)
      return
    }
    // a task whose input is not JSON (hand-written SQL) is not indexed, and not refused
    const prompted = (row: string) =>
      `(CASE WHEN json_valid(${row}.input) THEN json_type(${row}.input, '$.prompt') END) = 'text'`
    yield* sql.unsafe(`CREATE VIRTUAL TABLE ${search} USING fts5(scope, prompt, content = '', contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2')`)
    yield* sql.unsafe(`INSERT INTO ${search} (rowid, scope, prompt)
  SELECT rowid, ${sqliteScope(t.tasks)}, json_extract(input, '$.prompt') FROM ${t.tasks} WHERE ${prompted(t.tasks)}`)
    yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_insert AFTER INSERT ON ${t.tasks} WHEN ${prompted("NEW")} BEGIN
  INSERT INTO ${search} (rowid, scope, prompt) VALUES (NEW.rowid, ${
      sqliteScope("NEW")
    }, json_extract(NEW.input, '$.prompt'));
END`)
    yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_delete AFTER DELETE ON ${t.tasks} WHEN ${prompted("OLD")} BEGIN
  DELETE FROM ${search} WHERE rowid = OLD.rowid;
END`)
    // columns the storage never changes (hand-written SQL): the task indexed again
    yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_search_update AFTER UPDATE OF account_id, environment, input
  ON ${t.tasks} BEGIN
  DELETE FROM ${search} WHERE rowid = OLD.rowid;
  INSERT INTO ${search} (rowid, scope, prompt)
    SELECT NEW.rowid, ${sqliteScope("NEW")}, json_extract(NEW.input, '$.prompt') WHERE ${prompted("NEW")};
END`)
  })

/**
 * The smallest string above every string that starts with `prefix`, in code point order (PostgreSQL's `"C"`
 * collation of UTF-8 text), if any.
 */
export const codePointsAfter = (prefix: string): string | undefined => {
  const points = [...prefix]
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!
    if (last < 0x10ffff) return points.join("") + String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1)
  }
  return undefined
}

/**
 * The word counts' changes of tasks' prompts: `docs` names rows of `account_id`, `environment` and `words` (a
 * `tsvector` of the prompt's words only); each word with the word before it among the task's own words (byte order;
 * `''` for the first), counted `sign` times per (account, environment, word, previous word).
 */
const wordDeltas = (docs: string, sign: 1 | -1) =>
  `SELECT account_id, environment, word, prev, ${sign} * COUNT(*) AS n FROM (
    SELECT docs.account_id, docs.environment, l.lexeme AS word,
      COALESCE(lag(l.lexeme) OVER (PARTITION BY docs.task_id ORDER BY l.lexeme COLLATE "C"), '') AS prev
    FROM ${docs} CROSS JOIN LATERAL unnest(docs.words) AS l
  ) AS each_word GROUP BY account_id, environment, word, prev`

/** The documents of stored tasks (`rows`, aliased `o`: `id`, `account_id`, `environment`), without their scopes. */
const storedDocs = (search: string, rows: string) =>
  `(SELECT d.task_id, o.account_id, o.environment, ts_delete(d.document, ${pgScope("o")}) AS words
    FROM ${rows} JOIN ${search} AS d ON d.task_id = o.id) AS docs`

/**
 * PostgreSQL: the migration of the word counts (`t.counts`: `<prefix>task_search_counts`): how many
 * of an account's tasks (per environment) have each word with each previous word among their prompt's words (byte
 * order), kept as the list totals are (engine.md): by the trigger functions of the search table, replaced here, in
 * the writing transaction, one of `shards` shards per connection, each row written once per statement in key order. A count of
 * the tasks with a word starting with `w` is the sum of the rows of `[w, w')` whose previous word is below `w`: one
 * a task (a prompt's words that start with `w` are adjacent in byte order; only the first has a previous word
 * outside the range). Filled from the search table while writes to the tasks table wait. SQLite (FTS5 counts from
 * its index alone) has none.
 */
export const createSearchCounts = (
  t: { readonly tasks: string; readonly search: string; readonly counts: string },
  shards: number
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, pg } = SqlStore.columns(sql)
    if (!pg) return
    const { counts, search, tasks } = t
    yield* sql.unsafe(`LOCK TABLE ${tasks} IN SHARE ROW EXCLUSIVE MODE`)
    yield* sql.unsafe(`CREATE TABLE ${counts} (account_id TEXT NOT NULL, environment TEXT NOT NULL,
  word TEXT COLLATE "C" NOT NULL, prev TEXT COLLATE "C" NOT NULL, shard INTEGER NOT NULL, n ${big} NOT NULL,
  PRIMARY KEY (account_id, environment, word, prev, shard)) WITH (fillfactor = 50)`)
    yield* sql.unsafe(`INSERT INTO ${counts} (account_id, environment, word, prev, shard, n)
  SELECT account_id, environment, word, prev, 0, n FROM (${
      wordDeltas(storedDocs(search, `${tasks} AS o`), 1)
    }) AS counted`)
    /** Adds the net change of `deltas` (`wordDeltas`) to the counts, in key order, on the connection's shard. */
    const count = (deltas: string) =>
      `INSERT INTO ${counts} AS c (account_id, environment, word, prev, shard, n)
    SELECT account_id, environment, word, prev, pg_backend_pid() % ${shards}, n FROM (${deltas}) AS delta
    ORDER BY account_id, environment, word, prev
    ON CONFLICT (account_id, environment, word, prev, shard) DO UPDATE SET n = c.n + excluded.n;`
    /** Indexes the tasks of `rows` (`id`, `account_id`, `environment`, `input` as `n`) with a prompt. */
    const index = (rows: string) =>
      `WITH docs AS MATERIALIZED (
    SELECT n.id AS task_id, n.account_id, n.environment, ${pgWords("n")} AS words FROM ${rows} WHERE ${pgPrompted("n")}
  ), stored AS (
    INSERT INTO ${search} (task_id, document) SELECT task_id, ${pgDocumentOf(pgScope("docs"), "words")} FROM docs
  )
  ${count(wordDeltas("docs", 1))}`
    /** Drops the tasks of `rows` (`id`, `account_id`, `environment` as `o`) from the search table and the counts. */
    const drop = (rows: string) =>
      `${count(wordDeltas(storedDocs(search, rows), -1))}
  DELETE FROM ${search} WHERE task_id IN (SELECT o.id FROM ${rows});`
    const fn = (name: string, body: string) => sql.unsafe(pgTriggerFunction(tasks, name, body))
    /** A trigger's record as a one-row table `alias (columns)`. */
    const row = (record: string, alias: string, columns: ReadonlyArray<string>) =>
      `(SELECT ${columns.map((column) => `${record}.${column}`).join(", ")}) AS ${alias} (${columns.join(", ")})`
    yield* fn("insert", index("new_rows AS n"))
    yield* fn("delete", drop("old_rows AS o"))
    // an input that is not JSON (hand-written SQL) leaves the task out of the index, the update goes through
    yield* fn(
      "update",
      `${drop(row("OLD", "o", ["id", "account_id", "environment"]))}
  BEGIN
    ${index(row("NEW", "n", ["id", "account_id", "environment", "input"]))}
  EXCEPTION WHEN invalid_text_representation THEN
    NULL;
  END;`
    )
    yield* fn("truncate", `TRUNCATE ${search}, ${counts};`)
  })
