/**
 * `MEDIAGATE_WEBHOOK_SECRET=whsec_... npm start --workspace=@mediagate/example-webhook-receiver`: listens on
 * `PORT` (default 4000) and logs each verified event once.
 */
import { createServer } from "node:http"
import { makeHandler } from "./Receiver.js"

const secret = process.env["MEDIAGATE_WEBHOOK_SECRET"]
if (secret === undefined || secret === "") {
  console.error("set MEDIAGATE_WEBHOOK_SECRET to the secret shown when the webhook was registered")
  process.exit(1)
}
const port = Number(process.env["PORT"] ?? "4000")
const handler = makeHandler(secret, (event) => {
  console.log(`${event.type} ${event.data.task.id} ${event.data.task.status} (event ${event.id})`)
})
createServer((req, res) => void handler(req, res)).listen(port, () => console.log(`receiving webhooks on :${port}`))
