package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/gateway/tlsclient"
)

// ErrConfig is a configuration porthole refuses to start with.
var ErrConfig = errors.New("the OAuth configuration is not valid")

// Issuer is an authorization server porthole trusts.
type Issuer struct {
	// URL is the issuer identifier, exactly as tokens' iss and the
	// issuer's metadata say it.
	URL string
	// Alias names the issuer in principals ("oauth:<alias>:<value>"): by
	// default the URL's host.
	Alias string
}

// Introspection is an RFC 7662 endpoint and porthole's credentials for it.
type Introspection struct {
	URL                    string
	ClientID, ClientSecret string
	// Issuer is the URL (or alias) of the trusted issuer the endpoint
	// answers for: an answer naming another issuer is refused, so one
	// authorization server cannot vouch for another's principals. Empty
	// means the one issuer, and is refused with several.
	Issuer string
}

// Introspections are bounded: at most IntrospectionRate calls a second to
// the endpoint, IntrospectionBurst at once, however many addresses send
// tokens no cache holds (each address's failures are limited before, but
// many addresses are many budgets). Past it a token is answered 503, not
// refused as invalid.
//
// Of that budget, IntrospectionReservedRate and IntrospectionReservedBurst
// are kept for tokens the endpoint vouched for within RecentlyValid: a
// token that was valid is asked about again (its answer is held for 30 s)
// without waiting behind strangers' new tokens, which have the rest.
const (
	IntrospectionRate          = 20
	IntrospectionBurst         = 40
	IntrospectionReservedRate  = 5
	IntrospectionReservedBurst = 10
	RecentlyValid              = 10 * time.Minute
)

// Config configures a Validator.
type Config struct {
	// Resource is porthole's canonical resource: the full URL of its MCP
	// endpoint (PORTHOLE_PUBLIC_URL). A token's aud must hold it exactly.
	Resource string
	Issuers  []Issuer
	// PrincipalClaim is the claim whose value names the caller; "sub" by
	// default.
	PrincipalClaim string
	// Introspection, when set, is asked about tokens that are not JWTs.
	Introspection *Introspection
	// Client fetches metadata and keys and introspects; a client with a
	// 5 s timeout that follows no redirect by default.
	Client *http.Client
	// Now is the clock; time.Now by default.
	Now func() time.Time
	// Withdrawals, when set, refuses the tokens it lists before their exp.
	Withdrawals *Withdrawals
	// MinRSABits is the least modulus of an issuer's RSA key: 3072 (128
	// bits of security) by default, 2048 (112 bits) at the least.
	MinRSABits int
}

// DefaultMinRSABits is the least RSA modulus porthole verifies with
// unless told otherwise: 3072 bits give 128 bits of security, 2048 only
// 112.
const DefaultMinRSABits = 3072

// Bounds on what porthole holds or reads for OAuth.
const (
	// MaxTokenBytes caps a token: a JWT access token with many claims is
	// a few KiB.
	MaxTokenBytes = 8 << 10
	// MaxKeys caps an issuer's key set: an issuer holds a handful of keys,
	// and one serving thousands is refused, not held.
	MaxKeys = 64
	// maxDocumentBytes caps a metadata, key set or introspection answer.
	maxDocumentBytes = 256 << 10
	// leeway is the clock skew allowed on exp and nbf.
	leeway = 30 * time.Second
	// keyRefresh is the least time between two fetches of an issuer's keys
	// for an unknown kid.
	keyRefresh = time.Minute
	// introspectionTTL is how long a positive introspection answer holds.
	introspectionTTL = 30 * time.Second
	// maxCached caps each cache of validated tokens.
	maxCached = 10000
)

// aliasRule is what an issuer alias may be: it goes into principal names.
var aliasRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseIssuers reads PORTHOLE_OAUTH_ISSUER: comma-separated issuer URLs,
// each optionally named "alias=URL".
func ParseIssuers(s string) ([]Issuer, error) {
	var out []Issuer
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var is Issuer
		if alias, u, ok := strings.Cut(part, "="); ok && !strings.Contains(alias, "/") {
			is.Alias, is.URL = alias, u
		} else {
			is.URL = part
		}
		out = append(out, is)
	}
	return out, nil
}

// check validates the configuration and fills in defaults.
func (c *Config) check() error {
	if err := c.checkResource(); err != nil {
		return err
	}
	switch {
	case c.MinRSABits == 0:
		c.MinRSABits = DefaultMinRSABits
	case c.MinRSABits < 2048:
		return fmt.Errorf("%w: PORTHOLE_OAUTH_MIN_RSA_BITS %d is under 2048", ErrConfig, c.MinRSABits)
	}
	if err := c.checkIssuers(); err != nil {
		return err
	}
	if c.PrincipalClaim == "" {
		c.PrincipalClaim = "sub"
	}
	if err := c.checkIntrospection(); err != nil {
		return err
	}
	if c.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsclient.Config()
		c.Client = &http.Client{Transport: t, Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// checkResource holds PORTHOLE_PUBLIC_URL to a full https URL (http only
// on loopback).
func (c *Config) checkResource() error {
	u, err := url.Parse(c.Resource)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
		return fmt.Errorf("%w: PORTHOLE_PUBLIC_URL %q must be the full URL of porthole's MCP endpoint, such as https://porthole.example.com/mcp", ErrConfig, c.Resource)
	}
	if u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("%w: PORTHOLE_PUBLIC_URL %q must be https (http only on a loopback address)", ErrConfig, c.Resource)
	}
	return nil
}

// checkIssuers holds each issuer to an https URL (http only on loopback)
// and a unique alias fit for principal names, the host by default.
func (c *Config) checkIssuers() error {
	if len(c.Issuers) == 0 {
		return fmt.Errorf("%w: PORTHOLE_OAUTH_ISSUER names no issuer", ErrConfig)
	}
	seen := map[string]bool{}
	for i := range c.Issuers {
		is := &c.Issuers[i]
		iu, err := url.Parse(is.URL)
		if err != nil || !iu.IsAbs() || iu.Host == "" || iu.RawQuery != "" || iu.Fragment != "" {
			return fmt.Errorf("%w: the issuer %q is not an absolute URL without query or fragment", ErrConfig, is.URL)
		}
		// Security: keys fetched over plain HTTP could be anyone's.
		if !httpsOrLoopback(iu) {
			return fmt.Errorf("%w: the issuer %q must be https (http only on a loopback address)", ErrConfig, is.URL)
		}
		if is.Alias == "" {
			is.Alias = iu.Hostname()
		}
		if !aliasRule.MatchString(is.Alias) {
			return fmt.Errorf("%w: the issuer alias %q must be letters, digits, '.', '_' or '-' (it is part of principal names)", ErrConfig, is.Alias)
		}
		if seen[is.Alias] || seen[is.URL] {
			return fmt.Errorf("%w: the issuer %q or its alias %q is named twice", ErrConfig, is.URL, is.Alias)
		}
		seen[is.Alias], seen[is.URL] = true, true
	}
	return nil
}

// checkIntrospection holds the introspection endpoint, when set, to an
// https URL (http only on loopback), porthole's credentials there, and
// the one issuer it answers for, by URL or alias (the only issuer by
// default).
func (c *Config) checkIntrospection() error {
	in := c.Introspection
	if in == nil {
		return nil
	}
	iu, err := url.Parse(in.URL)
	if err != nil || !iu.IsAbs() || !httpsOrLoopback(iu) {
		return fmt.Errorf("%w: the introspection URL %q must be https (http only on a loopback address)", ErrConfig, in.URL)
	}
	if in.ClientID == "" || in.ClientSecret == "" {
		return fmt.Errorf("%w: introspection needs porthole's client id and secret", ErrConfig)
	}
	switch {
	case in.Issuer == "" && len(c.Issuers) == 1:
		in.Issuer = c.Issuers[0].URL
		return nil
	case in.Issuer == "":
		return fmt.Errorf("%w: with several issuers, name the one the introspection endpoint answers for (PORTHOLE_OAUTH_INTROSPECTION_ISSUER)", ErrConfig)
	}
	for _, is := range c.Issuers {
		if in.Issuer == is.URL || in.Issuer == is.Alias {
			in.Issuer = is.URL
			return nil
		}
	}
	return fmt.Errorf("%w: the introspection issuer %q is none of the issuers", ErrConfig, in.Issuer)
}

// httpsOrLoopback holds for an https URL, or an http one on loopback.
func httpsOrLoopback(u *url.URL) bool {
	return u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MetadataPath is where porthole serves its protected resource metadata
// (RFC 9728 §3.1): the well-known path with the resource's path appended,
// /.well-known/oauth-protected-resource/mcp for https://h/mcp.
func MetadataPath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return "/.well-known/oauth-protected-resource"
	}
	if u.EscapedPath() == "/" {
		return "/.well-known/oauth-protected-resource"
	}
	// RFC 9728 §3.1: the resource's path, as it is, after the well-known
	// path (a trailing slash included).
	return "/.well-known/oauth-protected-resource" + u.EscapedPath()
}

// MetadataURL is the full URL of the metadata, for WWW-Authenticate.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath(resource)
}
