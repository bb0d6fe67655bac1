/**
 * The registry: every family, one line each, in the order of the specification. The catalog, the request Schemas
 * by endpoint, the examples, the HttpApi group and its handlers, the price table and the vendor layers all derive
 * from this list; adding a family is adding its folder, and its import and line here.
 *
 * vendor9 is not listed: it creates no tasks (its voice list is the `voices` group).
 *
 * @since 0.1.0
 */
import type * as Family from "../Family.js"
import { vendor1 } from "./vendor1/index.js"
import { vendor2 } from "./vendor2/index.js"
import { vendor3 } from "./vendor3/index.js"
import { vendor4 } from "./vendor4/index.js"
import { vendor5 } from "./vendor5/index.js"
import { vendor6 } from "./vendor6/index.js"
import { vendor7 } from "./vendor7/index.js"
import { vendor8 } from "./vendor8/index.js"

/**
 * Every family that creates generation tasks.
 *
 * @since 0.1.0
 * @category constants
 */
export const registry = [
  vendor1,
  vendor2,
  vendor3,
  vendor4,
  vendor5,
  vendor6,
  vendor7,
  vendor8
] as const satisfies Family.Registry
