// An MCP client that is not mcp-go: the official TypeScript SDK. It connects
// over stdio (argv: stdio BINARY [ARGS...]) or streamable HTTP (argv: http URL
// [TOKEN]), initializes, lists tools, calls device_info and prints one JSON
// line with what it saw. Any failure exits non-zero.
//
// With KEVOLVE_SCENARIO=evolve it also drives the agent loop of a search
// (evolve_start, three evolve_next/evolve_submit rounds, evolve_status,
// evolve_best) on KEVOLVE_PROBLEM (default other/relu) on the CPU, with C
// kernels derived from each task's parent by changing its THREADS tunable.
// The SDK validates every structured result against the tool's output
// schema, so a schema that lies fails here.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
} else if (mode === "http") {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error("usage: client.mjs stdio BINARY [ARGS...] | http URL [TOKEN]");
  process.exit(2);
}
const client = new Client({ name: "kevolve-independent-client", version: "1.0.0" });
await client.connect(transport);
const server = client.getServerVersion();
const { tools } = await client.listTools();
const res = await client.callTool({ name: "device_info", arguments: {} });
const out = {
  server: server?.name,
  protocol: transport.protocolVersion ?? null,
  tools: tools.map((t) => t.name),
  isError: res.isError ?? false,
  targets: res.structuredContent?.targets ?? null,
  cpuThreads: res.structuredContent?.cpu?.threads ?? null,
};
if (process.env.KEVOLVE_SCENARIO === "evolve") {
  out.evolve = await evolveLoop(client);
}
console.log(JSON.stringify(out));
await client.close();

async function call(client, name, args, opts) {
  const res = await client.callTool({ name, arguments: args }, undefined, opts);
  const text = (res.content ?? []).map((c) => c.text ?? "").join("");
  if (res.isError) {
    return { error: text };
  }
  return res.structuredContent;
}

async function evolveLoop(client) {
  const problem = process.env.KEVOLVE_PROBLEM || "other/relu";
  const started = await call(client, "evolve_start", { problem, target: "cpu", budget: 4 });
  if (started.error) throw new Error(`evolve_start: ${started.error}`);
  const runId = started.run_id;
  const out = { runId, operator: started.operator, submits: [], progress: 0 };
  const waitLong = { timeout: 300000, resetTimeoutOnProgress: true, onprogress: () => out.progress++ };
  const next = async () => {
    for (let i = 0; i < 10; i++) {
      const r = await call(client, "evolve_next", { run_id: runId, wait_s: 40 }, { timeout: 120000 });
      if (r.error) throw new Error(`evolve_next: ${r.error}`);
      if (r.state === "ready") return r.task;
    }
    throw new Error("evolve_next never became ready");
  };
  // A task names its parent's code by URI; the client reads it as a resource.
  const parentCode = async (task) => {
    const { contents } = await client.readResource({ uri: task.parent.code_uri });
    return contents[0].text;
  };
  for (const threads of [1, 2, 4]) {
    const task = await next();
    const parent = await parentCode(task);
    if (threads === 1) {
      const wrong = await call(client, "evolve_submit", { run_id: runId, node_id: task.node_id + 100, code: parent });
      out.wrongNodeError = wrong.error ?? null;
    }
    const code = parent.replace(/^THREADS = \d+/m, `THREADS = ${threads}`);
    const r = await call(client, "evolve_submit",
      { run_id: runId, node_id: task.node_id, code, notes: `THREADS=${threads}`, wait_s: 240 }, waitLong);
    if (r.error) throw new Error(`evolve_submit: ${r.error}`);
    out.submits.push({ parent: task.node_id, node: r.node?.id ?? null, state: r.state,
      verdict: r.node?.result?.verdict ?? null, fitness: r.node?.result?.fitness ?? 0, newBest: r.new_best });
  }
  let status = await call(client, "evolve_status", { run_id: runId, wait_s: 5 });
  for (let i = 0; i < 20 && !status.error && status.status === "running"; i++) {
    status = await call(client, "evolve_status", { run_id: runId, since: status.next_since, wait_s: 30 }, { timeout: 120000 });
  }
  if (status.error) throw new Error(`evolve_status: ${status.error}`);
  out.status = status.status;
  out.evaluations = status.summary.evaluations;
  out.events = status.events.length;
  const best = await call(client, "evolve_best", { run_id: runId });
  if (best.error) throw new Error(`evolve_best: ${best.error}`);
  out.best = { node: best.node.id, verdict: best.node.result?.verdict ?? null, hasCode: best.node.code.includes("ModelNew") };
  const after = await call(client, "evolve_next", { run_id: runId, wait_s: 1 });
  out.finishedError = after.error ?? null;
  return out;
}
