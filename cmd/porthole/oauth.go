package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/gateway/oauth"
)

// oauthSettings make porthole an OAuth 2.1 resource server (docs/oauth.md).
type oauthSettings struct {
	publicURL         string
	issuers           string
	scopes            string
	principalClaim    string
	introspectionURL  string
	introspectionID   string
	introspectionFile string
	introspectionIss  string
	withdrawnFile     string
	minRSABits        int
	secret            string // read from introspectionFile
}

func (o *oauthSettings) register(s *settings) {
	s.string(&o.publicURL, "public-url", "PORTHOLE_PUBLIC_URL", "", "the full URL clients reach porthole's MCP endpoint at, such as https://porthole.example.com/mcp: porthole's OAuth resource (a token's aud must hold it)")
	s.string(&o.issuers, "oauth-issuer", "PORTHOLE_OAUTH_ISSUER", "", "comma-separated OAuth issuers whose access tokens porthole accepts beside its static tokens, each optionally alias=URL (the alias names principals oauth:<alias>:<value>); needs PORTHOLE_PUBLIC_URL")
	s.string(&o.scopes, "oauth-scopes", "PORTHOLE_OAUTH_SCOPES", "porthole:read", "space- or comma-separated scopes every OAuth token must hold; one without them gets 403 insufficient_scope")
	s.string(&o.principalClaim, "oauth-principal-claim", "PORTHOLE_OAUTH_PRINCIPAL_CLAIM", "sub", "the claim whose value names an OAuth caller (oauth:<issuer alias>:<value>)")
	s.string(&o.introspectionURL, "oauth-introspection-url", "PORTHOLE_OAUTH_INTROSPECTION_URL", "", "RFC 7662 endpoint asked about tokens that are not JWTs")
	s.string(&o.introspectionID, "oauth-introspection-client-id", "PORTHOLE_OAUTH_INTROSPECTION_CLIENT_ID", "", "porthole's client id at the introspection endpoint")
	s.string(&o.introspectionIss, "oauth-introspection-issuer", "PORTHOLE_OAUTH_INTROSPECTION_ISSUER", "", "the issuer (alias or URL) the introspection endpoint answers for; needed with several issuers, the one issuer by default")
	s.string(&o.withdrawnFile, "oauth-withdrawn-file", "PORTHOLE_OAUTH_WITHDRAWN_FILE", "", "file of OAuth principals whose tokens issued before a time, or of single tokens by jti, are refused before their exp (docs/oauth.md); polled like the tokens file")
	numeric(s, &o.minRSABits, "oauth-min-rsa-bits", "PORTHOLE_OAUTH_MIN_RSA_BITS", oauth.DefaultMinRSABits, false, "the least modulus of an issuer's RSA signing key porthole verifies with: 3072 (128 bits of security); 2048 accepts the keys most identity providers serve, at 112 bits")
	s.string(&o.introspectionFile, "oauth-introspection-client-secret-file", "PORTHOLE_OAUTH_INTROSPECTION_CLIENT_SECRET_FILE", "", "file holding porthole's client secret at the introspection endpoint (redacted everywhere)")
}

// readSecret reads the introspection secret, before the redactor is made,
// so that it is one of the secrets redacted.
func (o *oauthSettings) readSecret() (string, error) {
	if o.introspectionFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(o.introspectionFile)
	if err != nil {
		return "", fmt.Errorf("%w: PORTHOLE_OAUTH_INTROSPECTION_CLIENT_SECRET_FILE: %v", errUsage, err)
	}
	o.secret = strings.TrimSpace(string(b))
	return o.secret, nil
}

// options builds the front's OAuth options, or nil without an issuer, and
// keeps the issuers' keys fresh until ctx ends: fetched at start, and every
// minute after (an issuer down at start is taken up once it answers; its
// tokens are refused meanwhile, and static tokens keep working). The
// withdrawals file is read every reload.
func (o *oauthSettings) options(ctx context.Context, reload time.Duration, log *zap.Logger) (*gateway.OAuthOptions, error) {
	if o.issuers == "" {
		// A setting that means something only with an issuer, set
		// without one, is a configuration the operator did not finish.
		for _, s := range []struct{ name, value, unset string }{
			{"PORTHOLE_OAUTH_INTROSPECTION_URL", o.introspectionURL, ""}, {"PORTHOLE_PUBLIC_URL", o.publicURL, ""},
			{"PORTHOLE_OAUTH_SCOPES", o.scopes, "porthole:read"}, {"PORTHOLE_OAUTH_PRINCIPAL_CLAIM", o.principalClaim, "sub"},
			{"PORTHOLE_OAUTH_WITHDRAWN_FILE", o.withdrawnFile, ""},
			{"PORTHOLE_OAUTH_MIN_RSA_BITS", strconv.Itoa(o.minRSABits), strconv.Itoa(oauth.DefaultMinRSABits)},
		} {
			if s.value != s.unset {
				return nil, fmt.Errorf("%w: %s is set without PORTHOLE_OAUTH_ISSUER", errUsage, s.name)
			}
		}
		return nil, nil
	}
	issuers, _ := oauth.ParseIssuers(o.issuers)
	cfg := oauth.Config{Resource: o.publicURL, Issuers: issuers, PrincipalClaim: o.principalClaim, MinRSABits: o.minRSABits}
	if o.minRSABits < oauth.DefaultMinRSABits {
		log.Warn("issuers' RSA keys are accepted from PORTHOLE_OAUTH_MIN_RSA_BITS bits, under the 3072 that give 128 bits of security", zap.Int("bits", o.minRSABits))
	}
	if o.introspectionURL != "" {
		cfg.Introspection = &oauth.Introspection{URL: o.introspectionURL, ClientID: o.introspectionID, ClientSecret: o.secret, Issuer: o.introspectionIss}
	}
	if o.withdrawnFile != "" {
		w, err := oauth.OpenWithdrawals(o.withdrawnFile, log)
		if err != nil {
			return nil, fmt.Errorf("%w: PORTHOLE_OAUTH_WITHDRAWN_FILE: %v", errUsage, err)
		}
		cfg.Withdrawals = w
		go w.Watch(ctx, reload)
	}
	v, err := oauth.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	scopes := strings.Fields(strings.ReplaceAll(o.scopes, ",", " "))
	var servers []string
	for _, is := range issuers {
		servers = append(servers, is.URL)
	}
	go keepIssuersFresh(ctx, v, log)
	return &gateway.OAuthOptions{Validator: v, Resource: o.publicURL, AuthorizationServers: servers, Scopes: scopes}, nil
}

func keepIssuersFresh(ctx context.Context, v *oauth.Validator, log *zap.Logger) {
	said := ""
	for {
		fetch, cancel := context.WithTimeout(ctx, 15*time.Second)
		v.Refresh(fetch)
		cancel()
		switch p := v.Problem(); {
		case p != "" && p != said:
			log.Warn("OAuth tokens of an issuer are refused until it can be used; static tokens keep working", zap.String("problem", p))
		case p == "" && said != "":
			log.Info("every OAuth issuer can be used")
		}
		said = v.Problem()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
	}
}
