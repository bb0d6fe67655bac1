/**
 * Colour (internal/terminal.ts: `FORCE_COLOR`, `NO_COLOR`, `TERM=dumb`, a TTY) and the first start's keys
 * (internal/firstKeys.ts: in full on a terminal, hints and the keys file otherwise). The built command and server
 * in a pipe: test/cli-output.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import type * as Bootstrap from "@mediagate/accounts/Bootstrap"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as FirstKeys from "../src/internal/firstKeys.js"
import * as Terminal from "../src/internal/terminal.js"

const environment = (variables: Record<string, string>): Terminal.ColourEnvironment => ({
  forceColor: Option.fromNullable(variables["FORCE_COLOR"]),
  noColor: Option.fromNullable(variables["NO_COLOR"]),
  term: Option.fromNullable(variables["TERM"])
})

describe("colour", () => {
  it("follows FORCE_COLOR, then NO_COLOR, then TERM=dumb, then whether the stream is a TTY", () => {
    const cases: ReadonlyArray<readonly [Record<string, string>, boolean, boolean]> = [
      [{}, true, true],
      [{}, false, false],
      [{ NO_COLOR: "1" }, true, false],
      [{ NO_COLOR: "" }, true, true],
      [{ TERM: "dumb" }, true, false],
      [{ TERM: "xterm-256color" }, true, true],
      [{ FORCE_COLOR: "1" }, false, true],
      [{ FORCE_COLOR: "" }, false, true],
      [{ FORCE_COLOR: "1", NO_COLOR: "1" }, false, true],
      [{ FORCE_COLOR: "0" }, true, false],
      [{ FORCE_COLOR: "false" }, true, false]
    ]
    for (const [variables, isTTY, expected] of cases) {
      expect(Terminal.colour(environment(variables), isTTY), `${JSON.stringify(variables)} tty=${isTTY}`).toBe(expected)
    }
  })

  it("strips ANSI control sequences", () => {
    expect(Terminal.strip("\x1b[0;1m\x1b[0;37;1mmediagate\x1b[0;1m\x1b[0m and \x1b[1G\x1b[0Kplain"))
      .toBe("mediagate and plain")
  })

  it.effect("a plain console strips what goes to a stream without colour, and only that", () =>
    Effect.gen(function*() {
      const written: Array<[string, Array<unknown>]> = []
      const recorder = (name: string) => (...args: ReadonlyArray<unknown>) =>
        Effect.sync(() => void written.push([name, [...args]]))
      const base = yield* Effect.consoleWith((console) => Effect.succeed(console))
      const recording = { ...base, log: recorder("log"), error: recorder("error") } as Console.Console
      const coloured = "\x1b[1mbold\x1b[0m"
      yield* Console.log(coloured, 42).pipe(
        Effect.zipRight(Console.error(coloured)),
        Effect.withConsole(Terminal.plainConsole(recording, { stdout: false, stderr: true }))
      )
      expect(written).toEqual([["log", ["bold", 42]], ["error", [coloured]]])
    }))
})

describe("the first start's keys", () => {
  const created = {
    account: { id: "acct_01J00000000000000000000000" },
    live: { key: "mg_live_AbCdEfGhIjKlMnOpQrStUvWxYz012345" },
    test: { key: "mg_test_ZyXwVuTsRqPoNmLkJiHgFeDcBa987654" }
  } as unknown as Bootstrap.Bootstrapped
  const file = "/srv/mediagate/data/first-keys.json"

  it("a hint is the key's prefix and last 4 characters", () => {
    expect(FirstKeys.hint(created.live.key)).toBe("mg_live_…2345")
    expect(FirstKeys.hint(created.test.key)).toBe("mg_test_…7654")
  })

  it("on a terminal: the banner in text and pretty formats, one log line with the keys in json", () => {
    for (const format of ["text", "pretty"] as const) {
      const banner = FirstKeys.announce(created, { isTTY: true, format, file })
      expect(banner._tag).toBe("Banner")
      expect(banner._tag === "Banner" && banner.text).toContain(`live key: ${created.live.key}`)
    }
    expect(FirstKeys.announce(created, { isTTY: true, format: "json", file })).toEqual({
      _tag: "Line",
      message: "Mediagate created a first account (keys shown once; keep them)",
      annotations: { account_id: created.account.id, live_key: created.live.key, test_key: created.test.key },
      writeFile: false
    })
  })

  it("elsewhere, in every format: hints and the keys file, never a full key", () => {
    for (const format of ["text", "json", "pretty"] as const) {
      const line = FirstKeys.announce(created, { isTTY: false, format, file })
      expect(line).toMatchObject({
        _tag: "Line",
        annotations: {
          account_id: created.account.id,
          live_key: "mg_live_…2345",
          test_key: "mg_test_…7654",
          keys_file: file
        },
        writeFile: true
      })
      expect(JSON.stringify(line)).not.toContain(created.live.key)
      expect(JSON.stringify(line)).not.toContain(created.test.key)
    }
    expect(JSON.parse(FirstKeys.fileContent(created)))
      .toEqual({ account: created.account.id, live: created.live.key, test: created.test.key })
  })
})
