/**
 * The account balance (`GET /api/v1/balance`) and its ledger (`GET /api/v1/balance/ledger`, extension).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Balance } from "../Account.js"
import { page, success } from "../Envelope.js"
import { ValidationError } from "../Errors.js"
import { LedgerEntry, LedgerListQuery } from "../Ledger.js"
import { authenticated } from "./Common.js"

/**
 * `GET /api/v1/balance` and `GET /api/v1/balance/ledger`.
 *
 * @since 0.1.0
 * @category api
 */
export class BalanceApi extends HttpApiGroup.make("balance")
  .add(
    HttpApiEndpoint.get("get", "/balance")
      .addSuccess(success(Balance, "BalanceResponse"))
      .annotate(OpenApi.Summary, "Read the account balance and billing settings")
  )
  .add(
    HttpApiEndpoint.get("ledger", "/balance/ledger")
      .setUrlParams(LedgerListQuery)
      .addSuccess(page(LedgerEntry, "LedgerListResponse"))
      .addError(ValidationError.wire)
      .annotate(
        OpenApi.Summary,
        "List the account's ledger entries (charges, refunds, top-ups), newest first (extension; live money: empty " +
          "for a test key)"
      )
  )
  .pipe(authenticated)
  .annotate(OpenApi.Title, "Balance")
  .annotate(OpenApi.Description, "The account's balance, billing settings and ledger")
{}
