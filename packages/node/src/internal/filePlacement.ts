/**
 * Whether the nodes on the local file store share one directory, found out with markers: the engine's `Placement`
 * for a node with workers on the local store (docs/operations.md "Result files on several nodes").
 *
 * - At start, before the node registers or claims, it writes `<files>/.nodes/<its id>` (a dot segment: no file key
 *   can name it, so it is never served or pruned as a result file).
 * - `check` (the worker's, before its first claim and on every heartbeat) reads the live nodes of the registry (seen
 *   within {@link liveBeats} of their heartbeat periods) and looks for each one's marker. A node whose marker is missing writes its
 *   files into another directory: this node is apart from it (an error log when that set changes; the system status
 *   and `mediagate_file_store_unshared_nodes` show it), and neither claims a task the other accepted.
 * - Markers of nodes gone from the registry for an hour (`TaskAdmin.nodeDropAfterMs`) are removed; a node removes its
 *   own at shutdown, after the worker has left the registry.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { NodeRegistry } from "@mediagate/engine/NodeRegistry"
import { Placement } from "@mediagate/engine/Placement"
import { StorageClock } from "@mediagate/engine/StorageClock"
import { nodeDropAfterMs } from "@mediagate/engine/TaskAdmin"
import * as Ids from "@mediagate/persistence/Ids"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { hostname } from "node:os"

/** The directory of the markers, below the files directory. */
export const markerDirectory = ".nodes"

/**
 * Heartbeat periods a node counts as live here: longer than the system status waits before it reports a node stale
 * (`TaskAdmin.staleBeats`). A late heartbeat must not let a node take the tasks of another one it is apart from; the
 * tasks of a node that died are left to it for this long (100 s with the default lease), then claimed by any node.
 */
export const liveBeats = 10

/** The marker file name of a node id (ids are `<host>:<pid>:<ulid>`). */
export const markerName = (id: string): string => encodeURIComponent(id)

/** The error logged when this node cannot see the markers of `apart` in `directory`. */
export const unsharedError = (directory: string, apart: ReadonlyArray<string>) =>
  `the local file store ${directory} is not shared with the live node(s) ${apart.join(", ")}: their markers are ` +
  `not in ${directory}/${markerDirectory}, so each writes result files the other cannot serve. Until they share ` +
  `one directory, this node claims no task they accepted (and they none accepted here): a result URL works on the ` +
  `node that accepted its task. Give every node the same files directory (one data directory, or a shared mount) ` +
  `or set MEDIAGATE_FILE_STORE=s3 (docs/operations.md)`

/** The placement of a node on the local store under `directory`, on the task storage's node registry. */
export const make = (directory: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const registry = yield* NodeRegistry
    const clock = yield* StorageClock
    const root = path.resolve(directory)
    const markers = path.join(root, markerDirectory)
    const nodeId = `${hostname()}:${process.pid}:${Ids.ulid()}`
    const own = path.join(markers, markerName(nodeId))
    const mark = Effect.zipRight(
      fs.makeDirectory(markers, { recursive: true }),
      fs.writeFileString(own, `${JSON.stringify({ id: nodeId, host: hostname(), pid: process.pid })}\n`)
    )
    yield* Effect.acquireRelease(Effect.orDie(mark), () => Effect.ignore(fs.remove(own)))

    let apart: ReadonlyArray<string> = []
    /** The nodes in the registry at the last look. */
    let registeredIds: ReadonlySet<string> = new Set()
    const look = Effect.gen(function*() {
      const now = yield* clock.now
      const registered = yield* registry.nodes(now - nodeDropAfterMs)
      // the own marker, again if something removed it
      if (!(yield* fs.exists(own))) yield* mark
      const live = registered.filter((node) =>
        node.id !== nodeId && now - node.lastSeenAt <= liveBeats * node.heartbeatMs
      )
      const missing: Array<string> = []
      for (const node of live) if (!(yield* fs.exists(path.join(markers, markerName(node.id))))) missing.push(node.id)
      // markers of nodes gone from the registry for an hour (they did not shut down gracefully)
      const known = new Set([nodeId, ...registered.map((node) => node.id)].map(markerName))
      for (const name of yield* fs.readDirectory(markers)) {
        if (known.has(name)) continue
        const modified = Option.flatMap(yield* Effect.option(fs.stat(path.join(markers, name))), (info) => info.mtime)
        if (Option.isSome(modified) && modified.value.getTime() < Date.now() - nodeDropAfterMs) {
          yield* Effect.ignore(fs.remove(path.join(markers, name)))
        }
      }
      registeredIds = new Set(registered.map((node) => node.id))
      const changed = missing.length !== apart.length || missing.some((id, i) => apart[i] !== id)
      apart = missing
      if (changed) {
        yield* missing.length > 0
          ? Effect.logError(unsharedError(root, missing))
          : Effect.logInfo(`the local file store ${root} is shared with every live node again`)
      }
      return missing
    })
    // a failed look (the database or the disk), or one that takes longer than 5 s (a hung mount: the heartbeat that
    // extends the leases waits for it), keeps the last answer: it is tried again on the next heartbeat
    const check = look.pipe(
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the look took longer than 5 s" }),
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logWarning("file store: looking for the other nodes' markers failed", cause), apart)
      )
    )
    return Placement.of({ nodeId, check, apart: () => apart, knows: (id) => id === nodeId || registeredIds.has(id) })
  })

/**
 * The `Placement` of a node with workers on the local store (`MEDIAGATE_FILE_STORE` `local`, files in
 * `<MEDIAGATE_DATA_DIR>/files`); nothing on the S3 store or without workers (`MEDIAGATE_WORKERS=false`, or
 * `MEDIAGATE_WORKER_CONCURRENCY=0`: such a node never registers, so its tasks must record no node).
 */
export const layerConfig = (workers: boolean) =>
  Layer.unwrapEffect(Effect.map(
    Config.all({
      store: Config.literal("local", "s3")("MEDIAGATE_FILE_STORE").pipe(Config.withDefault("local" as const)),
      dataDir: Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data")),
      concurrency: Config.integer("MEDIAGATE_WORKER_CONCURRENCY").pipe(Config.withDefault(32))
    }),
    ({ concurrency, dataDir, store }) =>
      store === "local" && workers && concurrency > 0
        ? Layer.scoped(Placement, Effect.flatMap(Path.Path, (path) => make(path.join(dataDir, "files")))).pipe(
          Layer.provide(NodeContext.layer)
        )
        : Layer.empty
  ))
