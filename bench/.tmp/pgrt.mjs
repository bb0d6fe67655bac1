import pg from "pg"
const c = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" })
await c.connect()
await c.query("CREATE TEMP TABLE x (id int primary key, n int)"); await c.query("CREATE TABLE IF NOT EXISTS rt_probe (id int primary key, n int)"); await c.query("INSERT INTO rt_probe VALUES (1, 0) ON CONFLICT DO NOTHING")
const time = async (name, f, n = 300) => { const t0 = performance.now(); for (let i = 0; i < n; i++) await f(); console.log(name, ((performance.now() - t0) / n).toFixed(2), "ms") }
await time("SELECT 1", () => c.query("SELECT 1"))
await time("BEGIN;COMMIT (no write)", async () => { await c.query("BEGIN"); await c.query("COMMIT") })
await time("BEGIN;UPDATE;COMMIT", async () => { await c.query("BEGIN"); await c.query("UPDATE rt_probe SET n = n + 1 WHERE id = 1"); await c.query("COMMIT") })
await time("autocommit UPDATE", () => c.query("UPDATE rt_probe SET n = n + 1 WHERE id = 1"))
await c.query("DROP TABLE rt_probe")
await c.end()
