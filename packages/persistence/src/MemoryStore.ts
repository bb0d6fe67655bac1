/**
 * What the memory stores of Mediagate (tasks, accounts, webhooks, idempotent answers) share: bulk updates and deletes
 * over the `Map` that holds a table, the pages of a list ordered by id, and the fields a patch gives.
 *
 * @since 0.1.0
 */

/** The entries of `table` whose value `select` picks. */
const entriesWhere = <K, V>(table: ReadonlyMap<K, V>, select: (value: V) => boolean) =>
  [...table].filter(([, value]) => select(value))

/**
 * Replaces every value of `table` that `select` picks by `update`; answers how many.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateWhere = <K, V>(table: Map<K, V>, select: (value: V) => boolean, update: (value: V) => V): number => {
  const selected = entriesWhere(table, select)
  for (const [key, value] of selected) table.set(key, update(value))
  return selected.length
}

/**
 * Deletes every value of `table` that `select` picks; answers how many.
 *
 * @since 0.1.0
 * @category utils
 */
export const deleteWhere = <K, V>(table: Map<K, V>, select: (value: V) => boolean): number => {
  const selected = entriesWhere(table, select)
  for (const [key] of selected) table.delete(key)
  return selected.length
}

/**
 * The page of `matches` (newest first) below `beforeId` (when given): at most `limit`, and how many match in all.
 *
 * @since 0.1.0
 * @category utils
 */
export const page = <A extends { readonly id: string }>(
  matches: ReadonlyArray<A>,
  beforeId: string | undefined,
  limit: number
): { readonly items: ReadonlyArray<A>; readonly hasMore: boolean; readonly total: number } => {
  const after = beforeId === undefined ? matches : matches.filter((item) => item.id < beforeId)
  return { items: after.slice(0, limit), hasMore: after.length > limit, total: matches.length }
}

/**
 * The fields of `source` named by `keys` that are set (not `undefined`): what a patch gives, to spread over a value.
 *
 * @since 0.1.0
 * @category utils
 */
export const given = <T extends object, K extends keyof T>(source: T, keys: ReadonlyArray<K>) => {
  const fields: { [P in K]?: T[P] & ({} | null) } = {}
  for (const key of keys) {
    const value = source[key]
    if (value !== undefined) fields[key] = value
  }
  return fields
}
