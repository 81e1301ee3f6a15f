// peers.mjs: the graphile-worker and pg-boss side of `make bench-peers`
// (scripts/bench-peers runs it with node >= 22 from build/peers). One
// subcommand a call, on the database of PD_DATABASE_URL (libpq keywords, as
// scripts/pg prints them: the Unix socket, as Pendulum uses). It prints
// key=value lines on stdout; anything else goes to stderr. Exit 0, or 1 when
// it cannot measure (a count that does not add up, an error from a peer).
//
//   setup                          both peers' schemas (their own migrations),
//                                  pg-boss queues noop and lat (lat notifies)
//   reset gw|boss                  empty the peer's job tables
//   enqueue gw|boss N              N noop jobs, untimed (for a drain)
//   insert gw|boss N               N noop jobs in one call, timed: rate=
//                                  (jobs per second of the call alone: the
//                                  pool connected and warmed up before it)
//   drain gw|gwbatch|boss P C N    P worker processes (forked), each of
//                                  concurrency C, on the N jobs enqueued; from
//                                  the fork to the last process's exit, the
//                                  handler a no-op (async () => {}): rate=
//   pickup gw|boss N W             one idle worker process of concurrency 1;
//                                  this process enqueues one job at a time and
//                                  waits for the handler to start: from the
//                                  enqueue call's return (its commit
//                                  acknowledged) to the handler's first
//                                  statement, CLOCK_MONOTONIC in both
//                                  processes (process.hrtime). p50_us= p90_us=
//                                  p99_us= max_us= over N jobs after W warm-up
//
// The shapes (scripts/bench-peers says why):
//   gw       graphile-worker's defaults (WorkerPreset) but concurrentJobs C
//   gwbatch  the same plus the batching options of graphile-worker's
//            performance page: localQueue {size: 500}, completeJobBatchDelay
//            0, failJobBatchDelay 0
//   boss     pg-boss work() in batch mode, localConcurrency C: each
//            handler call gets up to PEERS_BOSS_BATCH (500, graphile-worker's
//            local queue) jobs and pg-boss completes them in one statement;
//            burstWhenBatchFull, so that a full batch fetches again at once
//            instead of after the half-second polling floor
import { fork } from "node:child_process";
import process from "node:process";
import pg from "pg";
import { run, runMigrations, makeWorkerUtils, Logger } from "graphile-worker";
import { PgBoss } from "pg-boss";

const BOSS_BATCH = Number(process.env.PEERS_BOSS_BATCH || 500);

function die(msg) {
	process.stderr.write(`peers: ${msg}\n`);
	process.exit(1);
}

// PD_DATABASE_URL's keywords as node-postgres options.
function pgConfig() {
	const url = process.env.PD_DATABASE_URL;
	if (!url) die("PD_DATABASE_URL is not set");
	const kw = {};
	for (const part of url.trim().split(/\s+/)) {
		const eq = part.indexOf("=");
		if (eq < 1) die(`PD_DATABASE_URL: cannot read "${part}" (keyword=value expected)`);
		kw[part.slice(0, eq)] = part.slice(eq + 1);
	}
	return { host: kw.host, port: Number(kw.port || 5432), database: kw.dbname, user: kw.user };
}

// Warnings and errors only: a per-job info line would be the peer's
// largest cost here, and Pendulum runs --quiet.
const quiet = new Logger(() => (level, message) => {
	if (level === "error" || level === "warning") process.stderr.write(`graphile-worker: ${message}\n`);
});

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

function pct(sorted, q) {
	let k = Math.ceil(sorted.length * q);
	if (k < 1) k = 1;
	if (k > sorted.length) k = sorted.length;
	return sorted[k - 1];
}

function bossOptions() {
	return { ...pgConfig(), max: 4, schedule: false, supervise: false, useListenNotify: true };
}

// A pool whose idle-client errors end the run (graphile-worker asks for a
// handler; an unhandled one would crash the process without a word).
function newPool(max) {
	const pool = new pg.Pool({ ...pgConfig(), max });
	pool.on("error", (e) => die(`postgres: ${e.message}`));
	pool.on("connect", (client) => client.on("error", (e) => die(`postgres: ${e.message}`)));
	return pool;
}

async function withPool(fn) {
	const pool = newPool(4);
	try {
		return await fn(pool);
	} finally {
		await pool.end();
	}
}

async function setup() {
	await withPool(async (pool) => {
		await runMigrations({ pgPool: pool, logger: quiet });
	});
	const boss = new PgBoss(bossOptions());
	boss.on("error", (e) => die(`pg-boss: ${e.message}`));
	await boss.start();
	await boss.createQueue("noop");
	await boss.createQueue("lat", { notify: true });
	await boss.stop({ graceful: false });
}

async function reset(peer) {
	await withPool(async (pool) => {
		if (peer === "gw") await pool.query("TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues CASCADE");
		else await pool.query("TRUNCATE pgboss.job");
		await pool.query("CHECKPOINT");
	});
}

const specs = (n) => Array.from({ length: n }, (_, i) => ({ identifier: "noop", payload: { i } }));
const bossJobs = (n) => Array.from({ length: n }, (_, i) => ({ data: { i } }));

// Insert n jobs; returns the microseconds of the insert call alone.
async function insertJobs(peer, n) {
	if (peer === "gw") {
		return await withPool(async (pool) => {
			const utils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
			await utils.addJobs(specs(1));
			await pool.query("TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues CASCADE");
			const list = specs(n);
			const t0 = nowUs();
			await utils.addJobs(list);
			const t1 = nowUs();
			await utils.release();
			return t1 - t0;
		});
	}
	const boss = new PgBoss(bossOptions());
	boss.on("error", (e) => die(`pg-boss: ${e.message}`));
	await boss.start();
	await boss.insert("noop", bossJobs(1));
	await withPool((pool) => pool.query("TRUNCATE pgboss.job"));
	const list = bossJobs(n);
	const t0 = nowUs();
	await boss.insert("noop", list);
	const t1 = nowUs();
	await boss.stop({ graceful: false });
	return t1 - t0;
}

async function counted(peer, n) {
	return await withPool(async (pool) => {
		if (peer === "boss") {
			const r = await pool.query("SELECT count(*) FILTER (WHERE state = 'completed') AS done, count(*) AS all FROM pgboss.job WHERE name = 'noop'");
			return { left: Number(r.rows[0].all) - Number(r.rows[0].done), done: Number(r.rows[0].done) };
		}
		const r = await pool.query("SELECT count(*) AS left FROM graphile_worker._private_jobs");
		return { left: Number(r.rows[0].left), done: n - Number(r.rows[0].left) };
	});
}

// The parent of a drain: fork P children, sum the counts they report, tell
// them to stop once all N are handled, time to the last exit.
async function drain(shape, procs, conc, n) {
	const peer = shape === "boss" ? "boss" : "gw";
	const before = await counted(peer, n);
	if (peer === "gw" && before.left !== n) die(`drain: ${before.left} graphile-worker jobs queued, ${n} expected`);
	const counts = new Array(procs).fill(0);
	let stopping = false;
	const t0 = nowUs();
	const exits = [];
	const kids = [];
	for (let i = 0; i < procs; i++) {
		const kid = fork(new URL(import.meta.url).pathname, ["child", shape, String(conc)], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
		kids.push(kid);
		exits.push(new Promise((resolve) => kid.on("exit", (code) => resolve(code))));
		kid.on("message", (m) => {
			counts[i] = m.n;
			if (!stopping && counts.reduce((a, b) => a + b, 0) >= n) {
				stopping = true;
				for (const k of kids) k.send({ stop: true });
			}
		});
	}
	const codes = await Promise.all(exits);
	const t1 = nowUs();
	if (codes.some((c) => c !== 0)) die(`drain: a worker process exited with ${codes.join(",")}`);
	const after = await counted(peer, n);
	if (after.left !== 0) die(`drain ${shape}: ${after.left} jobs left unfinished`);
	console.log(`jobs=${n}`);
	console.log(`us=${t1 - t0}`);
	console.log(`rate=${Math.round((n * 1e6) / (t1 - t0))}`);
}

// A worker process: reports its count every 20 ms (and at once when asked),
// stops gracefully (completions flushed) when its parent says so.
async function child(shape, conc) {
	let n = 0;
	let stop;
	const stopped = new Promise((resolve) => (stop = resolve));
	process.on("message", (m) => m.stop && stop());
	const report = setInterval(() => process.send({ n }), 20);
	if (shape === "boss") {
		const boss = new PgBoss(bossOptions());
		boss.on("error", (e) => die(`pg-boss: ${e.message}`));
		await boss.start();
		await boss.work("noop", { batchSize: BOSS_BATCH, localConcurrency: conc, burstWhenBatchFull: true }, async (jobs) => {
			n += jobs.length;
		});
		await stopped;
		await boss.stop({ graceful: true, close: true, timeout: 30000 });
	} else {
		const pool = newPool(conc + 2);
		const preset =
			shape === "gwbatch" ? { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } : { worker: {} };
		const runner = await run({
			pgPool: pool,
			concurrency: conc,
			noHandleSignals: true,
			logger: quiet,
			preset,
			taskList: { noop: async () => {} },
		});
		runner.events.on("job:success", () => n++);
		await stopped;
		await runner.stop();
		await pool.end();
	}
	clearInterval(report);
	process.disconnect();
}

// The worker process of a pickup: concurrency 1, the handler sends its
// start time to the parent.
async function pickupChild(peer) {
	const stamp = (seq) => process.send({ seq, h: nowUs() });
	let stop;
	const stopped = new Promise((resolve) => (stop = resolve));
	process.on("message", (m) => m.stop && stop());
	if (peer === "boss") {
		const boss = new PgBoss(bossOptions());
		boss.on("error", (e) => die(`pg-boss: ${e.message}`));
		await boss.start();
		await boss.work("lat", { batchSize: 1, localConcurrency: 1 }, async ([job]) => stamp(job.data.seq));
		process.send({ ready: true });
		await stopped;
		await boss.stop({ graceful: true, close: true });
	} else {
		const pool = newPool(4);
		const runner = await run({
			pgPool: pool,
			concurrency: 1,
			noHandleSignals: true,
			logger: quiet,
			preset: { worker: {} },
			taskList: { lat: async (payload) => stamp(payload.seq) },
		});
		process.send({ ready: true });
		await stopped;
		await runner.stop();
		await pool.end();
	}
	process.disconnect();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pickup(peer, n, warm) {
	const kid = fork(new URL(import.meta.url).pathname, ["pickup-child", peer], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
	const exited = new Promise((resolve) => kid.on("exit", resolve));
	const waiting = new Map();
	let ready;
	const isReady = new Promise((r) => (ready = r));
	kid.on("message", (m) => {
		if (m.ready) ready();
		else if (waiting.has(m.seq)) waiting.get(m.seq)(m.h);
	});
	await isReady;
	await sleep(500); // its LISTEN in place, its first poll done
	const pool = newPool(1);
	let boss, utils;
	if (peer === "boss") {
		boss = new PgBoss({ ...bossOptions(), useListenNotify: false });
		boss.on("error", (e) => die(`pg-boss: ${e.message}`));
		await boss.start();
	} else {
		utils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
	}
	const lat = [];
	for (let seq = 0; seq < n + warm; seq++) {
		const started = new Promise((resolve, reject) => {
			waiting.set(seq, resolve);
			setTimeout(() => reject(new Error(`job ${seq} not started after 10 s`)), 10000).unref();
		});
		if (peer === "boss") await boss.send("lat", { seq });
		else await utils.addJob("lat", { seq });
		const c = nowUs();
		const h = await started;
		waiting.delete(seq);
		if (seq >= warm) lat.push(h - c);
		await sleep(20);
	}
	if (boss) await boss.stop({ graceful: false });
	if (utils) await utils.release();
	await pool.end();
	kid.send({ stop: true });
	await exited;
	lat.sort((a, b) => a - b);
	console.log(`n=${lat.length}`);
	for (const [k, q] of [["p50_us", 0.5], ["p90_us", 0.9], ["p99_us", 0.99]]) console.log(`${k}=${pct(lat, q)}`);
	console.log(`max_us=${lat[lat.length - 1]}`);
}

const [cmd, ...args] = process.argv.slice(2);
const num = (s, what) => {
	const v = Number(s);
	if (!Number.isInteger(v) || v < 1) die(`${cmd}: ${what} must be a positive integer, not "${s}"`);
	return v;
};
const peerArg = (s) => {
	if (s !== "gw" && s !== "boss") die(`${cmd}: peer must be gw or boss, not "${s}"`);
	return s;
};
try {
	switch (cmd) {
		case "setup":
			await setup();
			break;
		case "reset":
			await reset(peerArg(args[0]));
			break;
		case "enqueue":
			await insertJobs(peerArg(args[0]), num(args[1], "N"));
			break;
		case "insert": {
			const n = num(args[1], "N");
			const us = await insertJobs(peerArg(args[0]), n);
			console.log(`jobs=${n}`);
			console.log(`us=${us}`);
			console.log(`rate=${Math.round((n * 1e6) / us)}`);
			break;
		}
		case "drain":
			if (!["gw", "gwbatch", "boss"].includes(args[0])) die(`drain: shape must be gw, gwbatch or boss, not "${args[0]}"`);
			await drain(args[0], num(args[1], "P"), num(args[2], "C"), num(args[3], "N"));
			break;
		case "child":
			await child(args[0], Number(args[1]));
			break;
		case "pickup-child":
			await pickupChild(args[0]);
			break;
		case "pickup":
			await pickup(peerArg(args[0]), num(args[1], "N"), Number(args[2] || 5));
			break;
		default:
			die(`unknown command "${cmd}": setup, reset, enqueue, insert, drain, pickup`);
	}
} catch (e) {
	die(`${cmd}: ${e.stack || e.message}`);
}
