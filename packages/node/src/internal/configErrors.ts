/**
 * A configuration error as an operator reads it: the settings that are wrong, each with why. Effect's own text of a
 * setting with a default (`Config.withDefault`) that is set to a bad value is "missing, or invalid, or missing"
 * (the default is an alternative that fails when the value is present); only the values that are wrong are named
 * when there are any, otherwise the settings that are missing.
 *
 * @internal
 */
import type * as ConfigError from "effect/ConfigError"

type Leaf = Exclude<ConfigError.ConfigError, ConfigError.And | ConfigError.Or>

const leavesOf = (error: ConfigError.ConfigError): Array<Leaf> =>
  error._op === "And" || error._op === "Or" ? [...leavesOf(error.left), ...leavesOf(error.right)] : [error]

/** `error` as one line: `NAME: why; OTHER: why`. */
export const describe = (error: ConfigError.ConfigError): string => {
  const leaves = leavesOf(error)
  const wrong = leaves.filter((leaf) => leaf._op !== "MissingData")
  const lines = (wrong.length > 0 ? wrong : leaves).map((leaf) =>
    leaf.path.length === 0 ? leaf.message : `${leaf.path.join(".")}: ${leaf.message}`
  )
  return [...new Set(lines)].join("; ")
}
