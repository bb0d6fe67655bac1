/**
 * `@mediagate/vendors`: the services over the families of the registry (prices and the price book, the planner, the
 * simulated and routed upstreams, input media checks), media rendering and the file store.
 *
 * @since 0.1.0
 */

/** Durations as configuration writes them. */
export * as Durations from "./Durations.js"
/**
 * Recent durations per model.
 *
 * @since 0.1.0
 */
export * as Estimates from "./Estimates.js"
/**
 * Where result files are stored: the port and the local disk.
 *
 * @since 0.1.0
 */
export * as FileStore from "./FileStore.js"
/**
 * The file store on an S3-compatible object store.
 *
 * @since 0.1.0
 */
export * as S3FileStore from "./S3FileStore.js"
/**
 * The `FileService` port: signed file URLs answered with ranges.
 *
 * @since 0.1.0
 */
export * as FileService from "./FileService.js"
/**
 * Media rendering (images, MP4 clips).
 *
 * @since 0.1.0
 */
export * as Media from "./Media.js"
/**
 * Price tables and prices.
 *
 * @since 0.1.0
 */
export * as Prices from "./Prices.js"
/**
 * The simulated upstream.
 *
 * @since 0.1.0
 */
export * as Simulated from "./Simulated.js"
/**
 * The engine's upstream, routed per task.
 *
 * @since 0.1.0
 */
export * as Upstreams from "./Upstreams.js"
/**
 * The engine's planner for the families of the registry.
 *
 * @since 0.1.0
 */
export * as VendorPlanner from "./VendorPlanner.js"
/**
 * The vendor9 voice catalog.
 *
 * @since 0.1.0
 */
export * as Voices from "./Voices.js"
/**
 * Fetching and checking remote input media.
 *
 * @since 0.1.0
 */
export * as RemoteMedia from "./RemoteMedia.js"
/**
 * The relay upstream.
 *
 * @since 0.1.0
 */
export * as Relay from "./Relay.js"
/**
 * Result links signed anew on reads.
 *
 * @since 0.1.0
 */
export * as ResultLinks from "./ResultLinks.js"
/**
 * Signed, expiring file URLs.
 *
 * @since 0.1.0
 */
export * as UrlSigner from "./UrlSigner.js"
/**
 * Remote input media checked when a task runs.
 *
 * @since 0.1.0
 */
export * as MediaInputs from "./MediaInputs.js"
/**
 * Upstream channels: the router (routing, failover, health).
 *
 * @since 0.1.0
 */
export * as Channels from "./Channels.js"
/**
 * The storage port of upstream channels.
 *
 * @since 0.1.0
 */
export * as ChannelStore from "./ChannelStore.js"
/**
 * Upstream channels in memory.
 *
 * @since 0.1.0
 */
export * as MemoryChannels from "./MemoryChannels.js"
/**
 * Upstream channels on SQLite and PostgreSQL.
 *
 * @since 0.1.0
 */
export * as SqlChannels from "./SqlChannels.js"
/**
 * Channel credentials encrypted at rest.
 *
 * @since 0.1.0
 */
export * as ChannelSecrets from "./ChannelSecrets.js"
/**
 * The operator's channel views and writes.
 *
 * @since 0.1.0
 */
export * as ChannelAdmin from "./ChannelAdmin.js"
/**
 * Circuit breakers of upstream channels.
 *
 * @since 0.1.0
 */
export * as Breaker from "./Breaker.js"
/**
 * Per-channel model mapping (JSONata).
 *
 * @since 0.1.0
 */
export * as Mapping from "./Mapping.js"
/**
 * The one result copy of every transport: guarded, streamed, off the worker.
 *
 * @since 0.1.0
 */
export * as ResultCopy from "./ResultCopy.js"
/**
 * A channel transport: its facts and its builder.
 *
 * @since 0.1.0
 */
export * as Transport from "./Transport.js"
/**
 * The registry of channel transports.
 *
 * @since 0.1.0
 */
export * as Transports from "./transports/index.js"
/**
 * The fal queue transport.
 *
 * @since 0.1.0
 */
export * as FalUpstream from "./FalUpstream.js"
/**
 * The Replicate predictions transport.
 *
 * @since 0.1.0
 */
export * as ReplicateUpstream from "./ReplicateUpstream.js"
/**
 * The ComfyUI transport.
 *
 * @since 0.1.0
 */
export * as ComfyUpstream from "./ComfyUpstream.js"
/**
 * The OpenAI-compatible images and videos transport.
 *
 * @since 0.1.0
 */
export * as OpenAiUpstream from "./OpenAiUpstream.js"
