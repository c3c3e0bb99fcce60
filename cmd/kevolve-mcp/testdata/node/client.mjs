// An MCP client that is not mcp-go: the official TypeScript SDK. It connects
// over stdio (argv: stdio BINARY [ARGS...]) or streamable HTTP (argv: http URL
// [TOKEN]), initializes, lists tools, calls device_info and prints one JSON
// line with what it saw. Any failure exits non-zero.
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
console.log(JSON.stringify(out));
await client.close();
