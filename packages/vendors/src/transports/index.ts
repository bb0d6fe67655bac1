/**
 * The registry: every channel transport, one line each. The channel router, the admin checks, the CLI and the docs
 * read it; adding a transport is adding its folder (its `Transport.make` and, for a new one, its implementation), its
 * import and line here, and its name to the contract's `Channel.channelTransports` (which the compiler below and a
 * test hold to this list, order included).
 *
 * @since 0.1.0
 */
import type { Channel } from "@mediagate/contract"
import type * as Transport from "../Transport.js"
import { comfyui } from "./comfyui/index.js"
import { fal } from "./fal/index.js"
import { openai } from "./openai/index.js"
import { relay } from "./relay/index.js"
import { replicate } from "./replicate/index.js"
import { simulated } from "./simulated/index.js"

/**
 * Every shipped transport, in the contract's order.
 *
 * @since 0.1.0
 * @category transports
 */
export const registry = [
  simulated,
  relay,
  fal,
  replicate,
  comfyui,
  openai
] as const satisfies Transport.Registry

/**
 * The names of the registry.
 *
 * @since 0.1.0
 * @category transports
 */
export type Name = (typeof registry)[number]["name"]

type Same<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false

/**
 * The compiler's check that the registry names exactly the contract's transports (their order: a test).
 *
 * @since 0.1.0
 * @category transports
 */
export const namesTheContract: Same<Name, Channel.ChannelTransport> = true
