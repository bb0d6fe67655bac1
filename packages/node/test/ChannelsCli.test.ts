/**
 * The `mediagate channels` commands (`list`, `show`, `create`, `update`, `enable`, `disable`, `delete`) on the
 * command line's own composition (`Stack.AdminPorts`: the channel store on SQLite, the environment's default
 * channels) with its settings from `Config`: JSON output like the other admin commands, the API key from
 * `MEDIAGATE_CHANNEL_API_KEY` (never printed, never stored in clear), the API's validation as `CODE: message`.
 */
import { NodeContext } from "@effect/platform-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as ChannelSecrets from "@mediagate/vendors/ChannelSecrets"
import * as SqlChannels from "@mediagate/vendors/SqlChannels"
import * as ConfigProvider from "effect/ConfigProvider"
import type * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Cli from "../src/Cli.js"
import * as Stack from "../src/internal/stack.js"

const channelKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
const envKey = "sk_live_from_the_environment_QRST"
const flagKey = "sk_live_given_on_the_command_line_MNOP"

/**
 * Runs the command line with `environment` as its settings, on the database of `database` (one database for the
 * commands of a test, as the real command on a server's database); answers its exit and what it printed.
 */
const cli = (
  database: Context.Context<SqlClient.SqlClient>,
  args: ReadonlyArray<string>,
  environment: Record<string, string> = {}
) =>
  Effect.flatMap(Effect.console, (base) => {
    const out: Array<string> = []
    const capture: Console.Console = {
      ...base,
      log: (...parts: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(parts.join(" "))),
      error: (...parts: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(`ERR ${parts.join(" ")}`))
    }
    return Cli.run(["node", "mediagate", ...args]).pipe(
      Effect.withConsole(capture),
      Effect.provide(Cli.layerAdmin(Stack.AdminPorts.pipe(Layer.provide(Layer.succeedContext(database))))),
      Effect.provide(NodeContext.layer),
      Effect.withConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries({ MEDIAGATE_CHANNEL_KEY: channelKey, ...environment })))
      ),
      Effect.exit,
      Effect.map((exit) => ({ exit, out, json: () => JSON.parse(out.join("\n")) }))
    )
  })

const openDatabase = Effect.map(
  Layer.build(Databases.sqlite()),
  (context) => Context.pick(SqlClient.SqlClient)(context)
)

describe("mediagate channels", () => {
  it.scoped("creates, lists, shows, changes, disables, enables and deletes channels", () =>
    Effect.gen(function*() {
      const db = yield* openDatabase
      const created = yield* cli(db, [
        "channels",
        "create",
        "--name",
        "gateway A",
        "--transport",
        "relay",
        "--base-url",
        "https://a.example.com",
        "--family",
        "vendor1",
        "--family",
        "vendor3",
        "--priority",
        "10",
        "--concurrency",
        "50",
        "--timeout-ms",
        "9000"
      ], { MEDIAGATE_CHANNEL_API_KEY: envKey })
      expect(created.exit._tag).toBe("Success")
      const a = created.json()
      expect(a).toMatchObject({
        name: "gateway A",
        transport: "relay",
        settings: { base_url: "https://a.example.com", timeout_ms: 9000 },
        credentials_set: true,
        credentials_hint: "…QRST",
        families: ["vendor1", "vendor3"],
        models: [],
        priority: 10,
        weight: 1,
        concurrency: 50,
        enabled: true
      })
      const sim = (yield* cli(db, [
        "channels",
        "create",
        "--name",
        "sim",
        "--transport",
        "simulated",
        "--family",
        "vendor3",
        "--model",
        "vendor3-3",
        "--weight",
        "4",
        "--disabled"
      ], { MEDIAGATE_CHANNEL_API_KEY: envKey })).json()
      // a simulated channel takes no key: the environment's is not used for it
      expect(sim).toMatchObject({
        transport: "simulated",
        credentials_set: false,
        models: ["vendor3-3"],
        weight: 4,
        enabled: false,
        disabled_reason: "disabled by an operator"
      })

      const listed = yield* cli(db, ["channels", "list"])
      expect(listed.json().map((c: any) => c.id)).toEqual(["default:simulated", a.id, sim.id])
      expect((yield* cli(db, ["channels", "show", a.id])).json()).toEqual(a)

      const changed =
        (yield* cli(db, ["channels", "update", a.id, "--weight", "3", "--model", "vendor1-2", "--name", "gateway A1"]))
          .json()
      expect(changed).toMatchObject({
        name: "gateway A1",
        weight: 3,
        models: ["vendor1-2"],
        priority: 10,
        credentials_hint: "…QRST"
      })
      const rekeyed = (yield* cli(db, ["channels", "update", a.id, "--all-models", "--api-key", flagKey])).json()
      expect([rekeyed.models, rekeyed.credentials_hint]).toEqual([[], "…MNOP"])
      const fromEnv = (yield* cli(db, ["channels", "update", a.id, "--api-key-from-env"], {
        MEDIAGATE_CHANNEL_API_KEY: "sk_live_third_key_value_WXYZ"
      })).json()
      expect(fromEnv.credentials_hint).toBe("…WXYZ")
      // an update without --api-key-from-env leaves the key alone, whatever the environment holds
      const untouched =
        (yield* cli(db, ["channels", "update", a.id, "--priority", "20"], { MEDIAGATE_CHANNEL_API_KEY: envKey })).json()
      expect([untouched.priority, untouched.credentials_hint]).toEqual([20, "…WXYZ"])

      const disabled = (yield* cli(db, ["channels", "disable", a.id])).json()
      expect([disabled.enabled, disabled.disabled_reason]).toEqual([false, "disabled by an operator"])
      const enabled = (yield* cli(db, ["channels", "enable", a.id])).json()
      expect([enabled.enabled, enabled.disabled_reason]).toEqual([true, null])

      expect((yield* cli(db, ["channels", "delete", sim.id])).json()).toEqual({ id: sim.id, deleted: true })
      const gone = yield* cli(db, ["channels", "show", sim.id])
      expect(gone.exit._tag).toBe("Failure")
      expect(gone.out).toEqual([`ERR CHANNEL_NOT_FOUND: channel ${sim.id} not found`])

      // no key was ever printed, nor stored in clear
      const everything = [created, listed, changed, rekeyed, fromEnv].flatMap((run) => run.out).join("\n")
      for (const secret of [envKey, flagKey, "sk_live_third_key_value_WXYZ"]) expect(everything).not.toContain(secret)
      const sql = Context.get(db, SqlClient.SqlClient)
      const rows = yield* sql`SELECT * FROM ${sql(SqlChannels.tables().channels)}`
      expect(JSON.stringify(rows)).not.toContain("sk_live")
      expect(String(rows[0]!["credentials"])).toMatch(/^v1\./)
    }))

  it.scoped("reports refusals with their code and fails", () =>
    Effect.gen(function*() {
      const db = yield* openDatabase
      const refusals: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, string>, string]> = [
        [
          [
            "channels",
            "create",
            "--name",
            "A",
            "--transport",
            "relay",
            "--base-url",
            "https://a.example.com",
            "--family",
            "vendor1"
          ],
          {},
          "ERR VALIDATION_ERROR: credentials.api_key: required for a relay channel"
        ],
        [
          ["channels", "create", "--name", "A", "--transport", "relay", "--family", "vendor1", "--api-key", flagKey],
          {},
          "ERR VALIDATION_ERROR: settings.base_url: required for a relay channel (the upstream's absolute http or https URL)"
        ],
        [
          ["channels", "create", "--name", "S", "--transport", "simulated", "--family", "vendor3", "--weight", "0"],
          {},
          "ERR VALIDATION_ERROR: weight: must be an integer from 1 to 1000"
        ],
        [
          ["channels", "create", "--name", "S", "--transport", "simulated"],
          {},
          "ERR VALIDATION_ERROR: families: must be a non-empty list of vendor1, vendor2, vendor3, vendor4, vendor5, vendor6, vendor7, vendor8"
        ],
        [
          [
            "channels",
            "create",
            "--name",
            "A",
            "--transport",
            "relay",
            "--base-url",
            "https://a.example.com",
            "--family",
            "vendor1"
          ],
          { MEDIAGATE_CHANNEL_KEY: "", MEDIAGATE_CHANNEL_API_KEY: envKey },
          `ERR VALIDATION_ERROR: ${ChannelSecrets.noKeyMessage}`
        ],
        [
          ["channels", "create", "--name", "F", "--transport", "fal", "--family", "vendor4", "--settings", "[1]"],
          { MEDIAGATE_CHANNEL_API_KEY: envKey },
          "ERR VALIDATION_ERROR: --settings: must be a JSON object or @<file> holding one (not a JSON object)"
        ],
        [
          [
            "channels",
            "create",
            "--name",
            "F",
            "--transport",
            "fal",
            "--family",
            "vendor4",
            "--settings",
            `{"mapping":{"vendor4-3-0-t2i":{"target":"fal-ai/flux","output":"images[0."}}}`
          ],
          { MEDIAGATE_CHANNEL_API_KEY: envKey },
          "ERR VALIDATION_ERROR: settings.mapping.vendor4-3-0-t2i.output: the output mapping of model vendor4-3-0-t2i does not compile"
        ],
        [
          [
            "channels",
            "create",
            "--name",
            "C",
            "--transport",
            "comfyui",
            "--base-url",
            "http://gpu:8188",
            "--family",
            "vendor4",
            "--settings",
            `{"mapping":{"vendor4-3-0-t2i":{"target":"sdxl"}}}`
          ],
          {},
          "ERR VALIDATION_ERROR: settings.mapping.vendor4-3-0-t2i.target: no workflow named sdxl in settings.workflows"
        ],
        [
          ["channels", "update", "default:simulated", "--weight", "2"],
          {},
          "ERR VALIDATION_ERROR: channel default:simulated comes from the environment"
        ],
        [
          ["channels", "update", "ch_nope", "--api-key-from-env"],
          {},
          "ERR VALIDATION_ERROR: --api-key-from-env: MEDIAGATE_CHANNEL_API_KEY is not set"
        ],
        [["channels", "delete", "ch_nope"], {}, "ERR CHANNEL_NOT_FOUND: channel ch_nope not found"]
      ]
      for (const [args, environment, expected] of refusals) {
        const run = yield* cli(db, args, environment)
        expect(run.exit._tag, args.join(" ")).toBe("Failure")
        expect(run.out, args.join(" ")).toHaveLength(1)
        expect(run.out[0], args.join(" ")).toContain(expected)
      }
      expect((yield* cli(db, ["channels", "list"])).json().map((c: any) => c.id)).toEqual(["default:simulated"])
    }))

  it.scoped("creates a channel of each HTTP transport, with --settings JSON for mappings and workflows", () =>
    Effect.gen(function*() {
      const db = yield* openDatabase
      const mapping = { "vendor4-3-0-t2i": { target: "fal-ai/flux/dev", input: `{ "prompt": input.prompt }` } }
      const fal = yield* cli(db, [
        "channels",
        "create",
        "--name",
        "fal",
        "--transport",
        "fal",
        "--family",
        "vendor4",
        "--settings",
        JSON.stringify({ mapping, poll_interval_ms: 2000, callbacks: false })
      ], { MEDIAGATE_CHANNEL_API_KEY: envKey })
      expect(fal.exit._tag, fal.out.join("\n")).toBe("Success")
      expect(fal.json()).toMatchObject({
        transport: "fal",
        credentials_set: true,
        settings: { mapping, poll_interval_ms: 2000, callbacks: false }
      })
      // --base-url wins over the JSON's; a workflow named by a mapping's target
      const workflow = {
        graph: {
          "9": { class_type: "SaveImage", inputs: { images: ["8", 0] } },
          "8": { class_type: "VAEDecode", inputs: {} }
        }
      }
      const comfy = yield* cli(db, [
        "channels",
        "create",
        "--name",
        "gpu",
        "--transport",
        "comfyui",
        "--family",
        "vendor4",
        "--base-url",
        "http://gpu:8188",
        "--settings",
        JSON.stringify({
          base_url: "http://ignored:1",
          workflows: { sdxl: workflow },
          mapping: { "vendor4-3-0-t2i": { target: "sdxl" } }
        })
      ])
      expect(comfy.exit._tag, comfy.out.join("\n")).toBe("Success")
      expect(comfy.json()).toMatchObject({
        transport: "comfyui",
        credentials_set: false,
        settings: { base_url: "http://gpu:8188" }
      })
      const changed = yield* cli(db, ["channels", "update", fal.json().id, "--settings", `{"poll_rate": 7}`])
      expect(changed.json().settings).toMatchObject({ mapping, poll_interval_ms: 2000, poll_rate: 7 })
      expect(JSON.stringify([fal, comfy, changed].flatMap((run) => run.out))).not.toContain(envKey)
    }))
})
