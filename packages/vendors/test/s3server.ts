/**
 * An S3-compatible server for tests: `s3rver` in-process on a free loopback port, a temporary directory and one
 * bucket, closed with the scope.
 */
import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

interface S3rverInstance {
  run(): Promise<{ readonly port: number }>
  close(): Promise<void>
}
type S3rverClass = new(options: {
  readonly port: number
  readonly address: string
  readonly silent: boolean
  readonly directory: string
  readonly configureBuckets: ReadonlyArray<{ readonly name: string }>
}) => S3rverInstance

// s3rver ships no types: its constructor as the tests use it
const S3rver = createRequire(import.meta.url)("s3rver") as S3rverClass

/** What a test needs to reach the server (s3rver accepts the credentials `S3RVER`/`S3RVER`). */
export interface S3Server {
  readonly endpoint: string
  readonly bucket: string
}

/** Starts s3rver with `bucket` for the scope. */
export const s3Server = (bucket = "bucket") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const directory = mkdtempSync(join(tmpdir(), "mediagate-s3-"))
      const server = new S3rver({
        port: 0,
        address: "127.0.0.1",
        silent: true,
        directory,
        configureBuckets: [{ name: bucket }]
      })
      const { port } = await server.run()
      return { server, directory, info: { endpoint: `http://127.0.0.1:${port}`, bucket } satisfies S3Server }
    }),
    ({ directory, server }) =>
      Effect.promise(async () => {
        await server.close()
        rmSync(directory, { recursive: true, force: true })
      })
  ).pipe(Effect.map(({ info }) => info))

/** The settings of an S3 file store on `server` (path style, s3rver's credentials). */
export const s3Settings = (server: S3Server, prefix = ""): ReadonlyArray<readonly [string, string]> => [
  ["MEDIAGATE_FILE_STORE", "s3"],
  ["MEDIAGATE_S3_BUCKET", server.bucket],
  ["MEDIAGATE_S3_ENDPOINT", server.endpoint],
  ["MEDIAGATE_S3_REGION", "us-east-1"],
  ["MEDIAGATE_S3_FORCE_PATH_STYLE", "true"],
  ["MEDIAGATE_S3_ACCESS_KEY_ID", "S3RVER"],
  ["MEDIAGATE_S3_SECRET_ACCESS_KEY", "S3RVER"],
  ...(prefix === "" ? [] : [["MEDIAGATE_S3_PREFIX", prefix] as const])
]
