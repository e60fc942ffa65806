package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/porthole-dev/porthole/gateway/oauth"
)

// OAuthOptions make porthole an OAuth 2.1 resource server beside its
// static tokens (the MCP authorization specification; docs/oauth.md).
type OAuthOptions struct {
	// Validator validates access tokens of the trusted issuers.
	Validator *oauth.Validator
	// Resource is PORTHOLE_PUBLIC_URL, the full URL of the MCP endpoint.
	Resource string
	// AuthorizationServers are the issuers, for the metadata.
	AuthorizationServers []string
	// Scopes must all be granted to a token for it to call anything
	// (PORTHOLE_OAUTH_SCOPES; porthole:read by default).
	Scopes []string
}

type identityKey struct{}

// oauthIdentity is the OAuth identity of a call: from the go-sdk's
// TokenInfo, where the verifier put it, or from the request's context.
func oauthIdentity(ctx context.Context, info *auth.TokenInfo) *oauth.Identity {
	if info != nil {
		if id, ok := info.Extra["oauth"].(*oauth.Identity); ok {
			return id
		}
	}
	id, _ := ctx.Value(identityKey{}).(*oauth.Identity)
	return id
}

// serveResourceMetadata serves porthole's protected resource metadata (RFC
// 9728) at the path-suffixed well-known URL of its resource, and at the
// well-known URL without a path, where some clients look first. No token
// is needed: it is what a client reads to learn where to get one. It sits
// behind the Host check like everything else, and answers a page of any
// origin, as public documents do.
func serveResourceMetadata(mux interface {
	Method(string, string, http.Handler)
}, o *OAuthOptions) {
	h := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource,
		AuthorizationServers:   o.AuthorizationServers,
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "porthole",
	})
	for _, path := range metadataPaths(o) {
		mux.Method(http.MethodGet, path, h)
		mux.Method(http.MethodOptions, path, h) // a browser's preflight, which h answers
	}
}

// metadataPaths are the paths the protected resource metadata is served
// at.
func metadataPaths(o *OAuthOptions) []string {
	return []string{oauth.MetadataPath(o.Resource), "/.well-known/oauth-protected-resource"}
}

// challenge is the WWW-Authenticate of a refusal (RFC 6750 §3, RFC 9728
// §5.1): where the metadata is, the scopes a call needs, and the error.
func (o *OAuthOptions) challenge(errCode string) string {
	c := `Bearer realm="porthole"`
	if errCode != "" {
		c += `, error="` + errCode + `"`
	}
	if o != nil {
		c += fmt.Sprintf(`, resource_metadata=%q`, oauth.MetadataURL(o.Resource))
		if len(o.Scopes) > 0 {
			c += fmt.Sprintf(`, scope=%q`, strings.Join(o.Scopes, " "))
		}
	}
	return c
}

// missingScope is the first required scope the identity lacks, or "".
func (o *OAuthOptions) missingScope(id *oauth.Identity) string {
	for _, s := range o.Scopes {
		if !id.HasScope(s) {
			return s
		}
	}
	return ""
}

// validate asks the validator about a token, within a bound: an issuer's
// keys or an introspection endpoint that hang must not hold the request.
// vouchedElsewhere says another replica vouched for the token recently.
func (o *OAuthOptions) validate(ctx context.Context, token string, vouchedElsewhere bool) (*oauth.Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if vouchedElsewhere {
		return o.Validator.ValidateVouched(ctx, token)
	}
	return o.Validator.Validate(ctx, token)
}

// insufficientScope writes the 403 of a valid token without a required
// scope.
func (o *OAuthOptions) insufficientScope(w http.ResponseWriter, scope string) {
	w.Header().Set("WWW-Authenticate", o.challenge("insufficient_scope")+fmt.Sprintf(`, error_description="the token lacks the scope %s"`, scope))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusForbidden)
	_, _ = fmt.Fprintf(w, "the access token lacks the scope %s, which every call needs\n", scope)
}
