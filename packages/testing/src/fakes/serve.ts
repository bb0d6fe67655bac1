/**
 * Runs one protocol fake on its own, to try a channel by hand or point a benchmark at it:
 *
 *   npx tsx packages/testing/src/fakes/serve.ts fal|replicate|comfyui|openai [--port 8400]
 *
 * Prints the base URL and the key it accepts (give them to the channel as `settings.base_url` and
 * `credentials.api_key`); jobs follow the prompt directives of `common.ts` (`[fake:delay=<ms>]`, `[fake:fail=...]`,
 * `[fake:video]`, `[fake:output=<url>]`). Stops on SIGINT or SIGTERM.
 */
import { startComfyFake } from "./comfyui.js"
import { startFalFake } from "./fal.js"
import { startOpenAiFake } from "./openai.js"
import { startReplicateFake } from "./replicate.js"

const [kind] = process.argv.slice(2).filter((arg) => !arg.startsWith("--") && !/^\d+$/.test(arg))
const portAt = process.argv.indexOf("--port")
const port = portAt === -1 ? 0 : Number(process.argv[portAt + 1])

const started = async (): Promise<
  { readonly url: string; readonly key: string | undefined; close(): Promise<void> }
> => {
  switch (kind) {
    case "fal": {
      const fake = await startFalFake({ port })
      return { url: fake.url, key: fake.key, close: fake.close }
    }
    case "replicate": {
      const fake = await startReplicateFake({ port })
      return { url: fake.url, key: fake.token, close: fake.close }
    }
    case "comfyui": {
      const fake = await startComfyFake({ port })
      return { url: fake.url, key: undefined, close: fake.close }
    }
    case "openai": {
      const fake = await startOpenAiFake({ port })
      return { url: fake.url, key: fake.key, close: fake.close }
    }
    default:
      throw new Error(`usage: serve.ts fal|replicate|comfyui|openai [--port N] (got ${kind ?? "nothing"})`)
  }
}

const fake = await started()
console.log(`${kind} fake listening at ${fake.url}${fake.key === undefined ? "" : ` (key: ${fake.key})`}`)
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void fake.close().then(() => process.exit(0)))
}
