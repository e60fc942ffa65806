// An authorization server for porthole's tests: panva's oidc-provider (an
// OpenID Certified implementation), configured as an authorization server
// for one kind of protected resource, an MCP server such as porthole.
//
// The Go package oidctest starts it and is its documentation; this script is
// only the configuration. Everything comes from the environment:
//
//   OIDC_PROVIDER_DIR  where package.json installed oidc-provider (node_modules beside it)
//   OIDC_PORT          the port of the listener handed over on fd 3; the issuer is http://127.0.0.1:OIDC_PORT
//   OIDC_JWKS_FILE     the private JWKS to sign with, RS256 keys; a restart with another file rotates the keys
//   OIDC_SCOPES        space-separated scopes a resource grants (default "porthole:read porthole:write")
//   OIDC_TOKEN_TTL     access-token lifetime in seconds (default 600)
//   OIDC_LOG           "debug" logs each request's outcome to stderr
//
// What it issues:
//
//   - A token request with resource=<URL> gets an access token whose aud is
//     that URL (RFC 8707). Any http(s) URL is a resource: a test asks for
//     porthole's public URL, or another to get a token of the wrong audience.
//     The token is an RS256 JWT with typ at+jwt (RFC 9068) for every client
//     but porthole-opaque-agent, whose tokens are opaque: only introspection
//     tells what they are. oidc-provider refuses to introspect or revoke a JWT.
//   - A token's scope is what was asked for among OIDC_SCOPES; a scope
//     outside them is dropped silently, not refused, and none asked for is
//     none granted.
//   - porthole-expired-agent and porthole-early-agent get JWTs signed with
//     the real keys but dated to be refused: the first expired two minutes
//     ago, the second not valid for two minutes (nbf), each beyond a 30 s leeway.
//   - Introspection (RFC 7662) and revocation (RFC 7009) answer any
//     confidential client; porthole, the resource server's own client, may
//     also revoke tokens of other clients.
//   - porthole-desktop is a public native client for the authorization-code
//     flow, redirecting to http://127.0.0.1/callback on any port (RFC 8252).
//     PKCE is required of every client. The login is oidc-provider's
//     development form: any login name is an account, any password passes.
//     A code exchanged without a resource gets a token for the resource of
//     the authorization request.
//   - Dynamic client registration (RFC 7591) is open, as an MCP client expects.
//
// All state is in memory: a restart forgets every issued token and grant.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const env = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === '') {
    if (fallback === undefined) throw new Error(`${name} is not set`);
    return fallback;
  }
  return v;
};

const dir = env('OIDC_PROVIDER_DIR');
const port = Number(env('OIDC_PORT'));
const jwks = JSON.parse(readFileSync(env('OIDC_JWKS_FILE'), 'utf8'));
const grantable = env('OIDC_SCOPES', 'porthole:read porthole:write');
const tokenTTL = Number(env('OIDC_TOKEN_TTL', '600'));
const debug = env('OIDC_LOG', '') === 'debug';

// The script runs from a temporary folder; oidc-provider is where npm put it.
const resolved = createRequire(join(dir, 'package.json')).resolve('oidc-provider');
const { default: Provider, errors } = await import(pathToFileURL(resolved).href);

const issuer = `http://127.0.0.1:${port}`;
const secret = (id) => `${id}-secret-for-tests-only-0123456789`;
const machine = (id) => ({
  client_id: id,
  client_secret: secret(id),
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  scope: grantable,
});

const clients = [
  machine('porthole-agent'),
  machine('porthole-opaque-agent'),
  machine('porthole-expired-agent'),
  machine('porthole-early-agent'),
  // The resource server: it introspects and revokes, and is issued nothing.
  {
    client_id: 'porthole',
    client_secret: secret('porthole'),
    grant_types: [],
    response_types: [],
    redirect_uris: [],
  },
  {
    client_id: 'porthole-desktop',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback'],
    scope: `openid offline_access ${grantable}`,
  },
];

// Claims a JWT of these clients carries instead of the true ones.
const dated = {
  'porthole-expired-agent': (p) => ({ iat: p.iat - 600, exp: p.iat - 120 }),
  'porthole-early-agent': (p) => ({ nbf: p.iat + 120 }),
};

const provider = new Provider(issuer, {
  clients,
  jwks,
  scopes: ['openid', 'offline_access', ...grantable.split(' ')],
  cookies: { keys: ['porthole-oidctest-cookie-key-not-secret'] },
  pkce: { required: () => true },
  async findAccount(ctx, id) {
    return { accountId: id, claims: async () => ({ sub: id }) };
  },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    revocation: {
      enabled: true,
      async allowedPolicy(ctx, client, token) {
        return token.clientId === client.clientId || client.clientId === 'porthole';
      },
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      async getResourceServerInfo(ctx, resource, client) {
        const url = new URL(resource);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') {
          throw new errors.InvalidTarget('a resource is an http or https URL here');
        }
        return {
          scope: grantable,
          accessTokenTTL: tokenTTL,
          accessTokenFormat: client.clientId === 'porthole-opaque-agent' ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  formats: {
    customizers: {
      async jwt(ctx, token, jwt) {
        const redate = dated[token.clientId];
        if (redate) Object.assign(jwt.payload, redate(jwt.payload));
      },
    },
  },
  ttl: {
    AccessToken: tokenTTL,
    ClientCredentials: tokenTTL,
    AuthorizationCode: 60,
    IdToken: 600,
    RefreshToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
});

if (debug) {
  for (const event of ['grant.success', 'grant.error', 'introspection.error', 'revocation.error',
    'server_error', 'authorization.error', 'registration_create.error']) {
    provider.on(event, (ctx, err) => console.error(event, err?.message ?? '', err?.error_description ?? ''));
  }
}

const server = createServer(provider.callback());
// The Go side holds the listening socket and hands it over, so that a
// restart answers on the same port with no window where another process
// could take it.
server.listen({ fd: 3 }, () => console.error(`oidc-provider listening, issuer ${issuer}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
