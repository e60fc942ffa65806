// A third-party connector: the TypeScript MCP SDK, given only porthole's
// URL and a pre-registered public client, is answered 401, finds the
// authorization server from the challenge's resource metadata, and runs
// the authorization-code flow with PKCE (the SDK's auth()). Where a person
// would be sent to the authorization URL, the script prints it as one JSON
// line ({"authorize": URL}) and reads the authorization code from its
// standard input (the test logs in for the person); then it connects and
// calls describe_namespace, and prints the result as one JSON line.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [url, clientId, redirectUrl] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

let tokens, verifier;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: "porthole-ts-connector", redirect_uris: [redirectUrl], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  clientInformation() { return { client_id: clientId }; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  redirectToAuthorization(u) { console.log(JSON.stringify({ authorize: u.toString() })); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

const connect = () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "porthole-ts-connector", version: "1.0.0" });
  return { transport, client, done: client.connect(transport) };
};

let c = connect();
try {
  await c.done;
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  const { value: code } = await lines.next();
  await c.transport.finishAuth(code.trim());
  c = connect();
  await c.done;
}
const r = await c.client.callTool({ name: "describe_namespace", arguments: {} });
console.log(JSON.stringify({ isError: r.isError === true, structured: r.structuredContent ?? null }));
await c.client.close();
process.exit(0);
