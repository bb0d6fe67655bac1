/**
 * How the production server hands over the keys of the first account it creates (decisions.md §9: shown once),
 * without writing a full key into a log (docs/operations.md "First start"):
 *
 * - stdout is a terminal, log format `text` or `pretty`: the banner, keys in full, as a person reads it;
 * - stdout is a terminal, log format `json`: one log line (the JSON logger's) with the keys in full;
 * - stdout is not a terminal (a pipe, a file, a log collector), any format: one log line with each key as a hint
 *   (its prefix and last 4 characters: `mg_live_…wXyZ`) and the path of `<dataDir>/first-keys.json`, which holds
 *   the account id and both keys in full, written with mode 600 (owner read and write only). The file stays until
 *   the operator deletes it; every later start warns while it is there.
 *
 * The line is logged at `Info` whatever `MEDIAGATE_LOG_LEVEL` says: it is how the keys are found.
 *
 * @since 0.1.0
 */
import type * as Bootstrap from "@mediagate/accounts/Bootstrap"

/** The name of the keys file in the data directory. */
export const fileName = "first-keys.json"

/** A key's hint: its prefix and its last 4 characters (`mg_live_…wXyZ`). */
export const hint = (key: string): string => `${key.slice(0, key.lastIndexOf("_") + 1)}…${key.slice(-4)}`

/** Where the keys go. */
export interface Output {
  /** Whether stdout is a terminal. */
  readonly isTTY: boolean
  /** `MEDIAGATE_LOG_FORMAT`. */
  readonly format: "text" | "json" | "pretty"
  /** The absolute path of the keys file. */
  readonly file: string
}

/** What to write: the banner, or one log line (with its annotations) and whether the keys file is written first. */
export type Announcement =
  | { readonly _tag: "Banner"; readonly text: string }
  | {
    readonly _tag: "Line"
    readonly message: string
    readonly annotations: Readonly<Record<string, string>>
    readonly writeFile: boolean
  }

/** What a first start writes, given where (see the module's comment). */
export const announce = (created: Bootstrap.Bootstrapped, output: Output): Announcement => {
  if (output.isTTY && output.format !== "json") {
    return {
      _tag: "Banner",
      text: [
        "",
        "Mediagate created a first account (shown once; keep these keys):",
        `  account:  ${created.account.id}`,
        `  live key: ${created.live.key}`,
        `  test key: ${created.test.key}`,
        ""
      ].join("\n")
    }
  }
  if (output.isTTY) {
    return {
      _tag: "Line",
      message: "Mediagate created a first account (keys shown once; keep them)",
      annotations: { account_id: created.account.id, live_key: created.live.key, test_key: created.test.key },
      writeFile: false
    }
  }
  return {
    _tag: "Line",
    message: `Mediagate created a first account; its keys are in ${output.file} (mode 600): ` +
      "read them once, keep them, then delete the file",
    annotations: {
      account_id: created.account.id,
      live_key: hint(created.live.key),
      test_key: hint(created.test.key),
      keys_file: output.file
    },
    writeFile: true
  }
}

/** The keys file's content. */
export const fileContent = (created: Bootstrap.Bootstrapped): string =>
  `${JSON.stringify({ account: created.account.id, live: created.live.key, test: created.test.key }, null, 2)}\n`
