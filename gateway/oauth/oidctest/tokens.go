package oidctest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The provider's clients, fixed in testdata/provider.mjs. The secrets are
// test values, known to anyone who reads this file.
const (
	// AgentClientID gets RS256 at+jwt access tokens by client credentials.
	AgentClientID = "porthole-agent"
	// OpaqueAgentClientID gets opaque access tokens by client credentials.
	OpaqueAgentClientID = "porthole-opaque-agent"
	// ExpiredAgentClientID gets JWTs that expired two minutes before issue.
	ExpiredAgentClientID = "porthole-expired-agent"
	// EarlyAgentClientID gets JWTs not valid until two minutes after issue.
	EarlyAgentClientID = "porthole-early-agent"
	// ResourceServerClientID is porthole's own client: it introspects and
	// revokes, and gets no tokens.
	ResourceServerClientID = "porthole"
	// PublicClientID is a public native client for the authorization-code
	// flow with PKCE, a person's MCP client.
	PublicClientID = "porthole-desktop"
	// RedirectURI is PublicClientID's redirect URI; any port of it is
	// accepted (RFC 8252 §7.3).
	RedirectURI = "http://127.0.0.1/callback"
)

// ClientSecret is the secret of a confidential client above.
func ClientSecret(clientID string) string {
	return clientID + "-secret-for-tests-only-0123456789"
}

// ClientCredentialsToken asks for an access token for resource (its aud)
// as AgentClientID, with scopes. It is an RS256 JWT, typ at+jwt.
func (p *Provider) ClientCredentialsToken(resource string, scopes ...string) (string, error) {
	return p.clientCredentials(AgentClientID, resource, scopes)
}

// OpaqueToken asks for an opaque access token for resource as
// OpaqueAgentClientID: only introspection tells what it grants.
func (p *Provider) OpaqueToken(resource string, scopes ...string) (string, error) {
	return p.clientCredentials(OpaqueAgentClientID, resource, scopes)
}

// ExpiredToken is a JWT from the provider, signed with its key, whose exp
// is two minutes before it was issued (and its iat ten).
func (p *Provider) ExpiredToken(resource string, scopes ...string) (string, error) {
	return p.clientCredentials(ExpiredAgentClientID, resource, scopes)
}

// NotYetValidToken is a JWT from the provider, signed with its key, whose
// nbf is two minutes after it was issued.
func (p *Provider) NotYetValidToken(resource string, scopes ...string) (string, error) {
	return p.clientCredentials(EarlyAgentClientID, resource, scopes)
}

// ClientCredentialsTokenAs asks for a token as any of the confidential
// clients above.
func (p *Provider) ClientCredentialsTokenAs(clientID, resource string, scopes ...string) (string, error) {
	return p.clientCredentials(clientID, resource, scopes)
}

func (p *Provider) clientCredentials(clientID, resource string, scopes []string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if resource != "" {
		form.Set("resource", resource)
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	var tok TokenResponse
	if err := p.post(p.meta.TokenEndpoint, confidential(clientID), form, &tok); err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// TokenResponse is a token endpoint's answer (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
}

// Introspection is an introspection endpoint's answer (RFC 7662 §2.2).
type Introspection struct {
	Active    bool   `json:"active"`
	Scope     string `json:"scope"`
	ClientID  string `json:"client_id"`
	Sub       string `json:"sub"`
	Aud       string `json:"aud"`
	Iss       string `json:"iss"`
	Exp       int64  `json:"exp"`
	Iat       int64  `json:"iat"`
	Jti       string `json:"jti"`
	TokenType string `json:"token_type"`
}

// Introspect asks the provider about token as the resource server does,
// with ResourceServerClientID. oidc-provider answers only for opaque
// tokens: a JWT gets an error (unsupported_token_type).
func (p *Provider) Introspect(token string) (Introspection, error) {
	var in Introspection
	err := p.post(p.meta.IntrospectionEndpoint, confidential(ResourceServerClientID), url.Values{"token": {token}}, &in)
	return in, err
}

// Revoke revokes an opaque token (RFC 7009), as ResourceServerClientID.
func (p *Provider) Revoke(token string) error {
	return p.post(p.meta.RevocationEndpoint, confidential(ResourceServerClientID), url.Values{"token": {token}}, nil)
}

// clientAuth is how a client authenticates at the provider: a public
// client has no secret and names itself in the form.
type clientAuth struct{ id, secret string }

func confidential(id string) clientAuth { return clientAuth{id, ClientSecret(id)} }

// post sends form to endpoint as client (client_secret_basic, or none for a
// public client) and decodes a JSON answer into into, unless it is nil.
func (p *Provider) post(endpoint string, client clientAuth, form url.Values, into any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if client.secret == "" {
		form.Set("client_id", client.id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if client.secret != "" {
		// RFC 6749 §2.3.1: each part form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(client.id), url.QueryEscape(client.secret))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		json.Unmarshal(body, &e)
		return &Error{Status: resp.StatusCode, Code: e.Error, Description: e.Description}
	}
	if into == nil {
		return nil
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("oidctest: %s answered %q: %w", endpoint, body, err)
	}
	return nil
}

// Error is an OAuth error answer (RFC 6749 §5.2).
type Error struct {
	Status      int
	Code        string // error
	Description string // error_description
}

func (e *Error) Error() string {
	return fmt.Sprintf("oidc-provider answered %d %s: %s", e.Status, e.Code, e.Description)
}
