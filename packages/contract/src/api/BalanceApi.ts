/**
 * The account balance (`GET /api/v1/balance`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Balance } from "../Account.js"
import { success } from "../Envelope.js"
import { authenticated } from "./Common.js"

/** `GET /api/v1/balance`. */
export class BalanceApi extends HttpApiGroup.make("balance")
  .add(
    HttpApiEndpoint.get("get", "/balance")
      .addSuccess(success(Balance, "BalanceResponse"))
      .annotate(OpenApi.Summary, "Read the account balance and billing settings")
  )
  .pipe(authenticated)
  .annotate(OpenApi.Title, "Balance")
{}
