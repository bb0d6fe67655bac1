/**
 * Turns Schema decode failures into the one-line `VALIDATION_ERROR` messages of the API: the field path, then the
 * rule, e.g. `input.duration: must be an integer from 4 to 12 for model vendor1-1-5-pro`.
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"

/**
 * One decode failure as `ParseResult.ArrayFormatter` reports it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Issue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/**
 * `input.reference_image_urls[2]`-style rendering of an issue path.
 *
 * @since 0.1.0
 * @category encoding
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, key) => typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`,
    ""
  )

const unexpectedMessage = "is not a known field"

/** Effect's structural type messages ("Expected { readonly a: ... }, actual 1") in plain words. */
const plain = (message: string): string => {
  if (/^Expected \{/.test(message)) return "must be an object"
  if (/^Expected (?:ReadonlyArray<|readonly \[|Array<)/.test(message)) return "must be an array"
  if (message.startsWith("Expected string, actual")) return "must be a string"
  if (message.startsWith("Expected number, actual")) return "must be a number"
  if (message.startsWith("Expected boolean, actual")) return "must be a boolean"
  return message.replace(/^Expected /, "expected ")
}

/**
 * The API message for one issue. `root` names the whole value when the path is empty (e.g. `body`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const formatIssue = (issue: Issue, root = "body"): string => {
  const path = issue.path.length === 0 ? root : formatPath(issue.path)
  switch (issue._tag) {
    case "Missing":
      return `${path} is required`
    case "Unexpected":
      return `${path}: ${unexpectedMessage}`
    default:
      return `${path}: ${plain(issue.message)}`
  }
}

/**
 * The API message for a decode failure: its first issue, formatted.
 *
 * @since 0.1.0
 * @category encoding
 */
export const formatParseError = (error: ParseResult.ParseError, root = "body"): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  return issues.length === 0 ? `${root}: is invalid` : formatIssue(issues[0]!, root)
}
