import pg from "pg"
const c = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" })
await c.connect()
const h = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" }); await h.connect(); await h.query("BEGIN"); await h.query("SELECT pg_advisory_xact_lock_shared(1835495266, 42)"); console.log("holder xid", (await h.query("SELECT txid_current() AS x")).rows[0])
console.log((await c.query(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next, (SELECT act.backend_xid::text FROM pg_locks l JOIN pg_stat_activity act ON act.pid = l.pid WHERE l.locktype = 'advisory' AND l.classid = 1835495266 AND l.objid = 42 AND l.objsubid = 2 LIMIT 1) AS xid`)).rows)
await h.query("ROLLBACK"); await h.end(); await c.end()
