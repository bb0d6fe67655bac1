/**
 * `@mediagate/vendors`: the services over the families of the registry (prices and the price book, the planner, the
 * simulated and routed upstreams, input media checks), media rendering and the file store.
 *
 * @since 0.1.0
 */

/** Durations as configuration writes them. */
export * as Durations from "./Durations.js"
/** Recent durations per model. */
export * as Estimates from "./Estimates.js"
/** Where result files are stored: the port and the local disk. */
export * as FileStore from "./FileStore.js"
/** The file store on an S3-compatible object store. */
export * as S3FileStore from "./S3FileStore.js"
/** The `FileService` port: signed file URLs answered with ranges. */
export * as FileService from "./FileService.js"
/** Media rendering (images, MP4 clips). */
export * as Media from "./Media.js"
/** Price tables and prices. */
export * as Prices from "./Prices.js"
/** The simulated upstream. */
export * as Simulated from "./Simulated.js"
/** The engine's upstream, routed per task. */
export * as Upstreams from "./Upstreams.js"
/** The engine's planner for the families of the registry. */
export * as VendorPlanner from "./VendorPlanner.js"
/** The vendor9 voice catalog. */
export * as Voices from "./Voices.js"
/** Fetching and checking remote input media. */
export * as RemoteMedia from "./RemoteMedia.js"
/** The relay upstream. */
export * as Relay from "./Relay.js"
/** Result links signed anew on reads. */
export * as ResultLinks from "./ResultLinks.js"
/** Signed, expiring file URLs. */
export * as UrlSigner from "./UrlSigner.js"
/** Remote input media checked when a task runs. */
export * as MediaInputs from "./MediaInputs.js"
/** Upstream channels: the router (routing, failover, health). */
export * as Channels from "./Channels.js"
/** The storage port of upstream channels. */
export * as ChannelStore from "./ChannelStore.js"
/** Upstream channels in memory. */
export * as MemoryChannels from "./MemoryChannels.js"
/** Upstream channels on SQLite and PostgreSQL. */
export * as SqlChannels from "./SqlChannels.js"
/** Channel credentials encrypted at rest. */
export * as ChannelSecrets from "./ChannelSecrets.js"
/** The operator's channel views and writes. */
export * as ChannelAdmin from "./ChannelAdmin.js"
/** Circuit breakers of upstream channels. */
export * as Breaker from "./Breaker.js"
/** Per-channel model mapping (JSONata). */
export * as Mapping from "./Mapping.js"
/** The one result copy of every transport: guarded, streamed, off the worker. */
export * as ResultCopy from "./ResultCopy.js"
/** A channel transport: its facts and its builder. */
export * as Transport from "./Transport.js"
/** The registry of channel transports. */
export * as Transports from "./transports/index.js"
/** The fal queue transport. */
export * as FalUpstream from "./FalUpstream.js"
/** The Replicate predictions transport. */
export * as ReplicateUpstream from "./ReplicateUpstream.js"
/** The ComfyUI transport. */
export * as ComfyUpstream from "./ComfyUpstream.js"
/** The OpenAI-compatible images and videos transport. */
export * as OpenAiUpstream from "./OpenAiUpstream.js"
