/**
 * The operator's upstream channels (`/admin/v1/channels`, docs/channels.md): list, create, read, change and delete
 * the upstreams live tasks are routed to. Enabled only when an admin token is configured.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Channel, ChannelCreate, ChannelUpdate, ChannelUsage, ChannelUsageQuery } from "../Channel.js"
import { Deleted, success } from "../Envelope.js"
import { ChannelInUse, ChannelNotFound, ServiceUnavailable, ValidationError } from "../Errors.js"
import { AdminAuthentication } from "../Security.js"
import { PathId } from "./Common.js"

const ChannelResponse = success(Channel, "ChannelResponse")

/**
 * The channel endpoints.
 *
 * @since 0.1.0
 * @category api
 */
export class ChannelsApi extends HttpApiGroup.make("channels")
  .add(
    HttpApiEndpoint.get("list", "/channels")
      .addSuccess(success(Schema.Array(Channel), "ChannelListResponse"))
      .annotate(OpenApi.Summary, "List the upstream channels with their health (credentials never shown)")
  )
  .add(
    HttpApiEndpoint.post("create", "/channels")
      .setPayload(ChannelCreate)
      .addSuccess(ChannelResponse, { status: 201 })
      .addError(ValidationError.wire)
      .annotate(OpenApi.Summary, "Create a channel (its credentials are stored encrypted)")
  )
  .add(
    HttpApiEndpoint.get("usage", "/channels/usage")
      .setUrlParams(ChannelUsageQuery)
      .addSuccess(success(Schema.Array(ChannelUsage), "ChannelUsageResponse"))
      .addError(ValidationError.wire)
      .annotate(OpenApi.Summary, "Charged against upstream cost per channel and model (ended live tasks)")
  )
  .add(
    HttpApiEndpoint.get("get", "/channels/:id")
      .setPath(PathId)
      .addSuccess(ChannelResponse)
      .addError(ChannelNotFound.wire)
      .annotate(OpenApi.Summary, "Read a channel and its health")
  )
  .add(
    HttpApiEndpoint.patch("update", "/channels/:id")
      .setPath(PathId)
      .setPayload(ChannelUpdate)
      .addSuccess(ChannelResponse)
      .addError(Schema.Union(ChannelNotFound.wire, ValidationError.wire))
      .annotate(OpenApi.Summary, "Change a channel: routing, settings, credentials, enabled")
  )
  .add(
    HttpApiEndpoint.del("delete", "/channels/:id")
      .setPath(PathId)
      .addSuccess(success(Deleted, "ChannelDeletedResponse"))
      .addError(Schema.Union(ChannelNotFound.wire, ChannelInUse.wire))
      .annotate(OpenApi.Summary, "Delete a channel with no task in flight")
  )
  .addError(ServiceUnavailable.wire)
  .middleware(AdminAuthentication)
  .prefix("/admin/v1")
  .annotate(OpenApi.Title, "Channels")
  .annotate(OpenApi.Description, "Upstream channels: routing, failover and health (docs/channels.md)")
{}
