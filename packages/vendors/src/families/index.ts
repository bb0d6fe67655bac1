/**
 * Every task family, by name.
 *
 * @since 0.1.0
 */
import type { Catalog } from "@mediagate/contract"
import type { Family } from "../Family.js"
import { vendor1 } from "./vendor1.js"
import { vendor2 } from "./vendor2.js"
import { vendor3 } from "./vendor3.js"
import { vendor4 } from "./vendor4.js"
import { vendor5 } from "./vendor5.js"
import { vendor6 } from "./vendor6.js"
import { vendor7 } from "./vendor7.js"
import { vendor8 } from "./vendor8.js"

/** The family modules. */
export const families: Readonly<Record<Catalog.TaskFamily, Family>> = {
  vendor1,
  vendor2,
  vendor3,
  vendor4,
  vendor5,
  vendor6,
  vendor7,
  vendor8
}

/** The family module of an endpoint. */
export const familyOf = (endpoint: Catalog.EndpointKey): Family =>
  families[endpoint.split("/")[0] as Catalog.TaskFamily]
