/**
 * Records built from lists, typed by their keys without casts: each builder checks at run time the claim its type
 * makes (every key present, every part held).
 *
 * @since 0.1.0
 */

type Entries = Readonly<Record<string, unknown>>

const hasKeys = <K extends string, V>(record: Readonly<Record<string, V>>, keys: ReadonlyArray<K>): record is {
  readonly [P in K]: V
} => keys.every((key) => Object.hasOwn(record, key))

const holdsAll = <T>(merged: unknown, parts: ReadonlyArray<Entries>): merged is T =>
  typeof merged === "object" && merged !== null &&
  parts.every((part) =>
    Object.entries(part).every(([key, value]) => Object.hasOwn(merged, key) && Reflect.get(merged, key) === value)
  )

/** The entries of a list by their key (the last one wins on a duplicate key). */
export const indexBy = <A, K extends string>(entries: ReadonlyArray<A>, key: (entry: A) => K): {
  readonly [P in K]: A
} => {
  const record: Readonly<Record<string, A>> = Object.fromEntries(entries.map((entry) => [key(entry), entry]))
  if (hasKeys(record, entries.map(key))) return record
  throw new Error("unreachable: a key is missing")
}

/** The parts merged into one record, typed as their intersection; two parts with the same key are refused. */
export const merge = <T>(parts: ReadonlyArray<Entries>, what: string): T => {
  const merged: Entries = Object.fromEntries(parts.flatMap((part) => Object.entries(part)))
  if (holdsAll<T>(merged, parts)) return merged
  throw new Error(`two parts define the same ${what}`)
}

/** A list that must not be empty, typed as such. */
export const nonEmpty = <A>(list: ReadonlyArray<A>, what: string): readonly [A, ...Array<A>] => {
  if (isNonEmpty(list)) return list
  throw new Error(`no ${what}`)
}

const isNonEmpty = <A>(list: ReadonlyArray<A>): list is readonly [A, ...Array<A>] => list.length > 0
