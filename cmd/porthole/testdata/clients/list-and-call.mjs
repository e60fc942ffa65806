// A third-party client: the TypeScript MCP SDK lists porthole's tools and
// calls the ones it is given, over streamable HTTP with a bearer token, and
// prints what it saw as one JSON line. The SDK checks each structured result
// against the tool's output schema.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, callsJSON] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "porthole-interop", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const results = [];
for (const call of JSON.parse(callsJSON)) {
  const r = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
  results.push({ name: call.name, isError: r.isError === true, structured: r.structuredContent ?? null });
}
console.log(JSON.stringify({
  tools: tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint === true })),
  results,
}));
await client.close();
