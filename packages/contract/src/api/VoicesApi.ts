/**
 * The vendor9 voice list (`GET /api/v1/vendor9/voices`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { success } from "../Envelope.js"
import { ValidationError } from "../Errors.js"
import { VoiceList, VoiceListQuery } from "../Voice.js"
import { authenticated } from "./Common.js"

/**
 * `GET /api/v1/vendor9/voices`.
 *
 * @since 0.1.0
 * @category api
 */
export class VoicesApi extends HttpApiGroup.make("voices")
  .add(
    HttpApiEndpoint.get("list", "/vendor9/voices")
      .setUrlParams(VoiceListQuery)
      .addSuccess(success(VoiceList, "VoiceListResponse"))
      .addError(ValidationError.wire)
      .annotate(OpenApi.Summary, "List voices; `name` filters by case-insensitive substring")
  )
  .pipe(authenticated)
  .annotate(OpenApi.Title, "Voices")
  .annotate(OpenApi.Description, "The voice catalog that speech generation reads voice ids from")
{}
